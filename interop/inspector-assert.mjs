// Helper for interop/inspector.sh: evaluates one assertion over the
// Inspector's JSON output. Usage: node inspector-assert.mjs FILE EXPRESSION
// EXPRESSION sees the parsed output as `r` and yields '' when it holds, or
// the reason it does not; that reason (or a parse error) is printed.
import { readFileSync } from 'node:fs';

const [file, expression] = process.argv.slice(2);
const text = readFileSync(file, 'utf8');
let r;
try {
    r = JSON.parse(text);
} catch {
    console.log(`output is not JSON: ${text.slice(0, 300)}`);
    process.exit(0);
}
const why = new Function('r', `return (${expression});`)(r);
if (why) console.log(`${why}: ${text.replace(/\s+/g, ' ').slice(0, 300)}`);
