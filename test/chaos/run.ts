// `make chaos`: runs the fault-injection scenarios one after the other and prints the table.
//
//   node --import tsx test/chaos/run.ts [--scale full|bounded] [--only worker-kill,fuzz] [--seed N] [--keep]
//
// Needs DATABASE_URL and REDIS_URL (make chaos starts project-local servers). Exits 1 when any
// check failed; the processes' logs stay in the folder printed at the end (always with --keep).
// CHAOS_LOG_LEVEL=debug makes the processes log more.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatTable, passed, type Row } from './report.js';
import { chaosContext, scales, type Scenario } from './scenario.js';
import { scenarios } from './scenarios/index.js';

const { values } = parseArgs({
  options: {
    scale: { type: 'string', default: 'full' },
    only: { type: 'string' },
    seed: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  process.stdout.write(`Usage: make chaos [SCALE=bounded] [ONLY=id,…] [SEED=n]
   or: node --import tsx test/chaos/run.ts [--scale full|bounded] [--only id,…] [--seed N] [--keep]

Runs the fault-injection scenarios one after the other against project-local Postgres and Redis
(DATABASE_URL, REDIS_URL) and prints the table; exits 1 on any finding.
Scenarios: ${scenarios.map((s) => s.id).join(', ')}
  --scale  full (default) or bounded (the scale make test runs)
  --only   a comma-separated list of scenario ids
  --seed   repeat a run's random choices
  --keep   keep the processes' logs even when every check passed
`);
  process.exit(0);
}
const scale = scales[values.scale as keyof typeof scales];
if (!scale) throw new Error(`--scale must be one of ${Object.keys(scales).join(', ')} (got ${values.scale})`);
const only = values.only?.split(',').map((s) => s.trim());
const unknownIds = only?.filter((id) => !scenarios.some((s) => s.id === id));
if (unknownIds?.length) throw new Error(`unknown scenario ${unknownIds.join(', ')}; known: ${scenarios.map((s) => s.id).join(', ')}`);
const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 1e9);
const logDir = await mkdtemp(join(tmpdir(), 'hermes-chaos-'));
const ctx = chaosContext(scale, seed, logDir, (line) => process.stderr.write(`[chaos] ${line}\n`));

const rows: Row[] = [];
const started = performance.now();
ctx.say(`scale ${values.scale}, seed ${seed}, logs in ${logDir}`);
for (const s of scenarios.filter((x: Scenario) => !only || only.includes(x.id))) {
  ctx.say(`${s.name}…`);
  const t0 = performance.now();
  try {
    rows.push({ ...(await s.run(ctx)), wallSeconds: (performance.now() - t0) / 1_000 });
  } catch (err) {
    rows.push({ scenario: s.name, faults: '—', admissions: 0, lost: 0, runTwice: 0, unknown: 0, resumed: 0, unexpected5xx: 0, outage503: 0, recoverySeconds: undefined, wallSeconds: (performance.now() - t0) / 1_000, notes: [], findings: [{ check: 'scenario', detail: (err as Error).stack ?? String(err) }] });
  }
  const row = rows.at(-1)!;
  ctx.say(`${s.name}: ${passed(row) ? 'ok' : `FAILED: ${row.findings.map((f) => f.check).join(', ')}`} (${row.wallSeconds.toFixed(0)} s)`);
}
const ok = rows.every(passed);
console.log(`\nFault-injection suite, scale ${values.scale}, seed ${seed}: ${((performance.now() - started) / 1_000).toFixed(0)} s\n`);
console.log(formatTable(rows));
if (ok && !values.keep) await rm(logDir, { recursive: true, force: true });
else console.log(`\nProcess logs: ${logDir} (rerun with --seed ${seed} to repeat the same choices)`);
process.exit(ok ? 0 : 1);
