// Reads one conformance run's output folder (DIR/server-<scenario>-<time>/checks.json)
// and prints, per scenario, its verdict and every failing or warning check with
// the suite's own message, so a FAIL line in scripts/test says exactly why.
//
// Usage: node conformance/report.mjs DIR [SCORED-LIST]
//   SCORED-LIST: a file with one scored scenario name a line (the
//   `conformance list --server --requirements REV` output); when given, prints
//   `scored: P/N` where P counts scored scenarios that ran with no FAILURE
//   check, lists scored scenarios that did not run at all, and prints
//   `failing-scored: a b …` (the scored scenarios that did not pass).
// Exits 0; the caller decides what the numbers mean.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [dir, scoredFile] = process.argv.slice(2);
const runs = new Map();
for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const m = entry.isDirectory() && /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry.name);
    if (!m) continue;
    const file = join(dir, entry.name, 'checks.json');
    if (!existsSync(file)) continue;
    runs.set(m[1], JSON.parse(readFileSync(file, 'utf8')));
}

const oneLine = (s) => String(s ?? '').replace(/\s+/g, ' ').slice(0, 400);
const failedScenarios = new Set();
for (const [scenario, checks] of [...runs].sort(([a], [b]) => a.localeCompare(b))) {
    const failures = checks.filter((c) => c.status === 'FAILURE');
    const warnings = checks.filter((c) => c.status === 'WARNING');
    if (failures.length > 0) failedScenarios.add(scenario);
    if (failures.length === 0 && warnings.length === 0) continue;
    const verdict = failures.length > 0 ? 'failed' : 'warned';
    console.log(`  ${scenario}: ${verdict} (${failures.length} failed, ${warnings.length} warnings of ${checks.length} checks)`);
    for (const c of [...failures, ...warnings]) {
        console.log(`    ${c.status} ${scenario}:${c.id} — ${oneLine(c.errorMessage ?? c.description)}`);
    }
}

if (scoredFile) {
    const scored = readFileSync(scoredFile, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);
    const missing = scored.filter((s) => !runs.has(s));
    const passed = scored.filter((s) => runs.has(s) && !failedScenarios.has(s));
    for (const s of missing) console.log(`  ${s}: did not run (no checks.json)`);
    const failing = scored.filter((s) => !passed.includes(s));
    console.log(`failing-scored: ${failing.join(' ')}`);
    console.log(`scored: ${passed.length}/${scored.length}`);
}
