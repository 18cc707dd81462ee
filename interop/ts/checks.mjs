// What every interop script of the TypeScript client shares: the pinned SDK
// imported from target/tools, and one PASS / FAIL line per check.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// The scripts live in the repository, the package in target/tools: import an
// entry point of it by the path its package.json exports, since ESM has no
// NODE_PATH. ENTRY is an export key: '.' or './stdio'.
export async function sdk(entry) {
    const pkgDir = join(process.env.WYMCP_TOOLS_NPM ?? '', 'node_modules/@modelcontextprotocol/client');
    const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
    return import(pathToFileURL(join(pkgDir, pkg.exports[entry].import.default)).href);
}

// Prints `PASS TAG name` or `FAIL TAG name: reason` per check and counts the
// failures; a check whose body throws fails with the error's message.
export class Checks {
    constructor(tag) {
        this.tag = tag;
        this.failed = 0;
    }

    async check(name, body) {
        try {
            const why = await body();
            if (why) {
                this.failed += 1;
                console.log(`FAIL ${this.tag} ${name}: ${why}`);
            } else {
                console.log(`PASS ${this.tag} ${name}`);
            }
        } catch (err) {
            this.failed += 1;
            const code = err?.code === undefined ? '' : ` (code ${err.code})`;
            console.log(`FAIL ${this.tag} ${name}: ${err?.message ?? String(err)}${code}`);
        }
    }
}
