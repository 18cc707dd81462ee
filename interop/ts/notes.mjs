// Interop check: the official TypeScript client (@modelcontextprotocol/client,
// pinned in tools/npm) against examples/notes over Streamable HTTP, sending
// `Authorization: Bearer` (the transport's requestInit.headers). What the
// handler API promises a client, in the era MODE speaks:
//   * the reader token's tools/list lacks the write tools, the writer's has them;
//   * a bad argument to add_note is a result with isError: true whose text
//     names the JSON pointer of the argument;
//   * a good add_note answers structuredContent with the id, and the same
//     value as JSON in a text block beside it.
//
// Usage: node interop/ts/notes.mjs URL MODE READER_TOKEN WRITER_TOKEN
//   MODE: 2026-07-28 (pinned modern era) or legacy (the 2025 handshake)
// Env:   WYMCP_TOOLS_NPM = the folder scripts/tools.sh installed tools/npm into
//
// Prints one `PASS ts-notes[MODE] check` or `FAIL … check: reason` line per
// check and exits non-zero if any failed.
import { Checks, sdk } from './checks.mjs';
import { isDeepStrictEqual } from 'node:util';

const [url, mode, readerToken, writerToken] = process.argv.slice(2);
if (!url || !['2026-07-28', 'legacy'].includes(mode) || !readerToken || !writerToken) {
    console.error('usage: notes.mjs URL 2026-07-28|legacy READER_TOKEN WRITER_TOKEN');
    process.exit(2);
}

const { Client, StreamableHTTPClientTransport } = await sdk('.');

const tag = `ts-notes[${mode}]`;
const modern = mode !== 'legacy';
const checks = new Checks(tag);
const check = (name, body) => checks.check(name, body);

// A client of MODE's era holding `token`, connected, or the reason it is not.
async function connect(token) {
    const client = new Client(
        { name: 'wymcp-interop-ts-notes', version: '1.0.0' },
        { versionNegotiation: { mode: modern ? { pin: '2026-07-28' } : 'legacy' } },
    );
    const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    const version = client.getNegotiatedProtocolVersion();
    if (modern ? version !== '2026-07-28' : !version?.startsWith('2025-')) {
        await client.close().catch(() => {});
        throw new Error(`negotiated ${version}, wanted ${modern ? '2026-07-28' : 'a 2025 revision'}`);
    }
    return client;
}

const write = ['add_note', 'delete_note'];

await check('reader token tools/list lacks add_note and delete_note', async () => {
    const reader = await connect(readerToken);
    try {
        const names = (await reader.listTools()).tools.map((t) => t.name);
        if (!names.includes('search_notes')) return `search_notes missing in [${names.join(', ')}]`;
        const listed = write.filter((n) => names.includes(n));
        return listed.length === 0 ? undefined : `listed ${listed.join(', ')} to a reader: [${names.join(', ')}]`;
    } finally {
        await reader.close().catch(() => {});
    }
});

let writer;
await check('writer token tools/list has add_note and delete_note', async () => {
    writer = await connect(writerToken);
    const names = (await writer.listTools()).tools.map((t) => t.name);
    const missing = [...write, 'search_notes'].filter((n) => !names.includes(n));
    return missing.length === 0 ? undefined : `missing ${missing.join(', ')} in [${names.join(', ')}]`;
});

if (writer !== undefined) {
    await check('add_note with text a number is isError naming /text', async () => {
        const result = await writer.callTool({ name: 'add_note', arguments: { text: 5 } });
        const text = (result.content ?? []).find((c) => c.type === 'text')?.text ?? '';
        if (result.isError !== true) return `expected isError: true, got ${JSON.stringify(result)}`;
        return text.includes('/text') ? undefined : `the text names no /text: ${JSON.stringify(text)}`;
    });
    await check('add_note answers structuredContent with the id, and its text block', async () => {
        const result = await writer.callTool({ name: 'add_note', arguments: { text: 'buy milk' } });
        if (result.isError) return `isError: ${JSON.stringify(result.content)}`;
        const structured = result.structuredContent;
        if (!Number.isInteger(structured?.id) || structured.uri !== `notes://${structured.id}`) {
            return `structuredContent is not {id, uri: notes://id}: ${JSON.stringify(structured)}`;
        }
        const texts = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
        const same = texts.some((t) => {
            try {
                return isDeepStrictEqual(JSON.parse(t), structured);
            } catch {
                return false;
            }
        });
        return same ? undefined : `no text block holds ${JSON.stringify(structured)}: ${JSON.stringify(texts)}`;
    });
    await writer.close().catch(() => {});
}

process.exit(checks.failed === 0 ? 0 : 1);
