// Interop check: the official TypeScript client (@modelcontextprotocol/client,
// pinned in tools/npm) against examples/everything, over Streamable HTTP (a
// running server) or over stdio (the client launches `BINARY --stdio` with
// the SDK's StdioClientTransport).
//
// Usage: node interop/ts/client.mjs URL|stdio:BINARY MODE
//   MODE: 2026-07-28 (pinned modern era) or legacy (the 2025 handshake)
// Env:   WYMCP_TOOLS_NPM = the folder scripts/tools.sh installed tools/npm into
//
// Prints one `PASS ts[MODE] check` (over stdio `ts-stdio[MODE]`) or
// `FAIL … check: reason` line per check and exits non-zero if any failed.
import { Checks, sdk } from './checks.mjs';

const [target, mode] = process.argv.slice(2);
if (!target || !['2026-07-28', 'legacy'].includes(mode)) {
    console.error('usage: client.mjs URL|stdio:BINARY 2026-07-28|legacy');
    process.exit(2);
}
const stdioBinary = target.startsWith('stdio:') ? target.slice('stdio:'.length) : undefined;

const { Client, StreamableHTTPClientTransport } = await sdk('.');
const { StdioClientTransport } = await sdk('./stdio');

const tag = stdioBinary === undefined ? `ts[${mode}]` : `ts-stdio[${mode}]`;
const via = stdioBinary === undefined ? 'SSE' : 'stdio';

// Every message the stdio transport hands up, in the order it read them:
// what the server wrote, before the SDK's Protocol layer handles it.
const wire = [];
// Over stdio the server's stderr (its logs) goes to this script's stderr.
function transport() {
    if (stdioBinary === undefined) return new StreamableHTTPClientTransport(new URL(target));
    const stdio = new StdioClientTransport({ command: stdioBinary, args: ['--stdio'], stderr: 'inherit' });
    let handler;
    Object.defineProperty(stdio, 'onmessage', {
        configurable: true,
        get: () => (handler === undefined ? undefined : (message, extra) => {
            wire.push(message);
            handler(message, extra);
        }),
        set: (next) => {
            handler = next;
        },
    });
    return stdio;
}

// The progress values the transport read for the request whose answer
// carries `text`, and whether they all came before that answer.
function wireProgress(text) {
    const answer = wire.findIndex((m) => firstText(m.result?.content) === text);
    if (answer < 0) return undefined;
    const progress = wire.filter((m) => m.method === 'notifications/progress');
    const before = wire.slice(0, answer).filter((m) => m.method === 'notifications/progress');
    return { values: before.map((m) => m.params.progress), after: progress.length - before.length };
}
const checks = new Checks(tag);
const check = (name, body) => checks.check(name, body);

function firstText(content) {
    const block = (content ?? []).find((c) => c.type === 'text');
    return block?.text;
}

const modern = mode !== 'legacy';
const versionNegotiation = { mode: modern ? { pin: '2026-07-28' } : 'legacy' };
const client = new Client(
    { name: 'wymcp-interop-ts', version: '1.0.0' },
    { versionNegotiation, capabilities: { elicitation: { form: {} }, sampling: {} } },
);

// The form's own defaults, as a user accepting a form unchanged sends them.
function defaultsOf(requestedSchema) {
    const content = {};
    for (const [name, field] of Object.entries(requestedSchema?.properties ?? {})) {
        if (field.default !== undefined) content[name] = field.default;
    }
    return content;
}

// The MRTR round: the client fulfils the server's embedded elicitation/create
// through this handler and retries with the answer and the echoed requestState.
// A form with defaults is accepted as offered (test_elicitation_sep1034_defaults
// offers `score: 95.5`); any other is answered with a name.
let elicited = 0;
client.setRequestHandler('elicitation/create', async (request) => {
    elicited += 1;
    const defaults = defaultsOf(request.params?.requestedSchema);
    if (Object.keys(defaults).length > 0) return { action: 'accept', content: defaults };
    return { action: 'accept', content: { name: 'Alice' } };
});

// Sampling: over MRTR on 2026-07-28; for a 2025 client, a
// sampling/createMessage request the server sends in the middle of the call.
let sampled = 0;
client.setRequestHandler('sampling/createMessage', async () => {
    sampled += 1;
    return { role: 'assistant', content: { type: 'text', text: 'ts-sampled' }, model: 'interop' };
});

// Every list_changed the server sent outside a request (a 2025 client's GET
// stream), in arrival order, and who waits for the next one.
const heard = [];
let onHeard = () => {};
for (const method of ['notifications/tools/list_changed', 'notifications/prompts/list_changed']) {
    client.setNotificationHandler(method, () => {
        heard.push(method);
        onHeard();
    });
}

let connected = false;
await check('connect', async () => {
    await client.connect(transport());
    connected = true;
    const version = client.getNegotiatedProtocolVersion();
    if (modern ? version !== '2026-07-28' : !version?.startsWith('2025-')) {
        return `negotiated ${version}, wanted ${modern ? '2026-07-28' : 'a 2025 revision'}`;
    }
    return undefined;
});

if (connected) {
    await check('tools/list', async () => {
        const { tools } = await client.listTools();
        const names = tools.map((t) => t.name);
        const missing = ['test_simple_text', 'test_error_handling', 'test_input_required_result_elicitation']
            .filter((n) => !names.includes(n));
        return missing.length === 0 ? undefined : `missing ${missing.join(', ')} in [${names.join(', ')}]`;
    });
    await check('tools/call test_simple_text', async () => {
        const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
        const text = firstText(result.content);
        if (result.isError) return `isError: ${text}`;
        return text ? undefined : `no text content in ${JSON.stringify(result)}`;
    });
    await check('tools/call test_error_handling (isError)', async () => {
        const result = await client.callTool({ name: 'test_error_handling', arguments: {} });
        return result.isError === true ? undefined : `expected isError: true, got ${JSON.stringify(result)}`;
    });
    await check('resources/read test://static-text', async () => {
        const { contents } = await client.readResource({ uri: 'test://static-text' });
        const text = contents?.[0]?.text;
        return text ? undefined : `no text contents in ${JSON.stringify(contents)}`;
    });
    await check('prompts/get test_prompt_with_arguments', async () => {
        const result = await client.getPrompt({
            name: 'test_prompt_with_arguments',
            arguments: { arg1: 'alpha', arg2: 'beta' },
        });
        const text = JSON.stringify(result.messages ?? []);
        return text.includes('alpha') && text.includes('beta')
            ? undefined
            : `arguments not in messages ${text}`;
    });
    await check(`progress over ${via} (tools/call test_tool_with_progress)`, async () => {
        const seen = [];
        const result = await client.callTool(
            { name: 'test_tool_with_progress', arguments: {} },
            { onprogress: (p) => seen.push(p.progress) },
        );
        if (result.isError) return `isError: ${firstText(result.content)}`;
        if (stdioBinary === undefined || seen.join(',') === '0,50,100') {
            return seen.join(',') === '0,50,100' ? undefined : `progress seen: [${seen.join(', ')}], wanted [0, 50, 100]`;
        }
        // Over stdio this SDK handles a notification in a microtask but a
        // response at once, dropping the progress handler: a last progress
        // read in one chunk with the answer never reaches onprogress. What the
        // server wrote is judged from what the transport read.
        const read = wireProgress(firstText(result.content));
        if (read === undefined) return 'the answer was not seen on the transport';
        if (read.values.join(',') !== '0,50,100' || read.after !== 0) {
            return `the transport read progress [${read.values.join(', ')}] before the answer and ${read.after} after, wanted [0, 50, 100] before`;
        }
        if (seen.length === 0) return 'onprogress was never called';
        console.log(
            `NOTE ${tag} progress: the transport read [0, 50, 100] before the answer; onprogress saw [${seen.join(', ')}] (the SDK dropped the rest, read with the answer)`,
        );
        return undefined;
    });
    if (!modern) {
        // A progressToken may be any number (schema.ts); the server answers
        // and reports no progress under a fractional one. Legacy only: on
        // 2026-07-28 this SDK (whose own ProgressToken is string | integer)
        // sends such a request without its Mcp-Method header, which the
        // server must refuse (-32020).
        await check('tools/call with a fractional progressToken (0.5)', async () => {
            const result = await client.callTool({
                name: 'test_simple_text',
                arguments: {},
                _meta: { progressToken: 0.5 },
            });
            if (result.isError) return `isError: ${firstText(result.content)}`;
            return firstText(result.content) ? undefined : `no text content in ${JSON.stringify(result)}`;
        });
    }
    if (modern) {
        await check('MRTR round accepting the defaults (95.5) tools/call test_elicitation_sep1034_defaults', async () => {
            const before = elicited;
            const result = await client.callTool({ name: 'test_elicitation_sep1034_defaults', arguments: {} });
            if (elicited === before) return 'the elicitation handler was never asked';
            const text = firstText(result.content) ?? '';
            if (result.isError) return `isError: ${text}`;
            return text.includes('"score":95.5') && text.includes('action=accept')
                ? undefined
                : `the defaults are not in the answer: ${text}`;
        });
        await check('MRTR round (elicitation) tools/call test_input_required_result_elicitation', async () => {
            const before = elicited;
            const result = await client.callTool({
                name: 'test_input_required_result_elicitation',
                arguments: {},
            });
            if (elicited === before) return 'the elicitation handler was never asked';
            if (result.isError) return `isError: ${firstText(result.content)}`;
            const text = firstText(result.content);
            return text ? undefined : `no text content after the round: ${JSON.stringify(result)}`;
        });
    }
    if (!modern && !target.startsWith('stdio:')) {
        // A 2025 client over HTTP: the server sends elicitation/create and
        // sampling/createMessage on the call's own SSE stream, the SDK answers
        // through its handlers with a POST, and the call answers.
        await check('mid-call elicitation/create (2025) tools/call test_elicitation', async () => {
            const before = elicited;
            const result = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
            if (elicited === before) return 'the elicitation handler was never asked';
            const text = firstText(result.content) ?? '';
            if (result.isError) return `isError: ${text}`;
            return text.includes('action=accept') && text.includes('Alice') ? undefined : `unexpected answer: ${text}`;
        });
        await check('mid-call sampling/createMessage (2025) tools/call test_sampling', async () => {
            const before = sampled;
            const result = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'Say something' } });
            if (sampled === before) return 'the sampling handler was never asked';
            const text = firstText(result.content) ?? '';
            if (result.isError) return `isError: ${text}`;
            return text.includes('ts-sampled') ? undefined : `unexpected answer: ${text}`;
        });
    }
    if (!modern) {
        // The 2025 standalone stream. Over HTTP the SDK opened its GET stream
        // after `initialized`, and a change made through another connection
        // (another client, maybe another replica) reaches it. Over stdio the
        // connection is the stream; a second connection would be a second
        // process, sharing no bus, so the change is made through this one.
        const overStdio = stdioBinary !== undefined;
        for (const [tool, method] of [
            ['test_trigger_tool_change', 'notifications/tools/list_changed'],
            ['test_trigger_prompt_change', 'notifications/prompts/list_changed'],
        ]) {
            const label = overStdio
                ? `stdio (2025) ${method} after ${tool} on the same connection`
                : `GET stream (2025) ${method} after ${tool} through another connection`;
            await check(label, async () => {
                heard.length = 0;
                const arrived = new Promise((resolve) => {
                    onHeard = () => heard.includes(method) && resolve(true);
                });
                let started = Date.now();
                if (overStdio) {
                    const result = await client.callTool({ name: tool, arguments: {} });
                    if (result.isError) return `${tool}: isError: ${firstText(result.content)}`;
                } else {
                    const other = new Client({ name: 'wymcp-interop-ts-other', version: '1.0.0' }, { versionNegotiation });
                    await other.connect(transport());
                    started = Date.now();
                    try {
                        const result = await other.callTool({ name: tool, arguments: {} });
                        if (result.isError) return `${tool} through another connection: isError: ${firstText(result.content)}`;
                    } finally {
                        await other.close().catch(() => {});
                    }
                }
                let timer;
                const late = new Promise((resolve) => {
                    timer = setTimeout(() => resolve(false), 10_000);
                });
                const ok = await Promise.race([arrived, late]);
                clearTimeout(timer);
                onHeard = () => {};
                const where = overStdio ? 'connection' : 'GET stream';
                if (!ok) return `no ${method} on the ${where} within 10 s (heard [${heard.join(', ')}])`;
                console.log(`NOTE ${tag} ${method} heard ${Date.now() - started} ms after ${tool} was called`);
                return undefined;
            });
        }
    }
    await client.close().catch(() => {});
}

// Capabilities are JSON objects whose values may be any JSON value (schema.ts
// `JSONValue`): a fraction and a null in an extension's settings, sent in
// every 2026 request's _meta (and in a 2025 client's initialize).
const extended = new Client(
    { name: 'wymcp-interop-ts', version: '1.0.0' },
    {
        versionNegotiation,
        capabilities: {
            elicitation: { form: {} },
            extensions: { 'com.example/wymcp-interop': { ratio: 0.5, since: null } },
        },
    },
);
await check('capabilities with a fraction and a null (extensions), tools/call test_simple_text', async () => {
    await extended.connect(transport());
    try {
        const version = extended.getNegotiatedProtocolVersion();
        if (modern && version !== '2026-07-28') return `negotiated ${version}, wanted 2026-07-28`;
        const result = await extended.callTool({ name: 'test_simple_text', arguments: {} });
        if (result.isError) return `isError: ${firstText(result.content)}`;
        return firstText(result.content) ? undefined : `no text content in ${JSON.stringify(result)}`;
    } finally {
        await extended.close().catch(() => {});
    }
});

process.exit(checks.failed === 0 ? 0 : 1);
