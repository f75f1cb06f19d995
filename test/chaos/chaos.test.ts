// The fault-injection suite at bounded scale, as part of `make test`: every scenario of `make chaos`
// (test/chaos/scenarios) with fewer faults and shorter outages, each a test that fails with the
// audit's findings. The table is printed at the end; the processes' logs of a failed run stay in
// the folder it names, and the seed repeats its random choices (`make chaos SCALE=bounded SEED=…`).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTable, passed, type Row } from './report.js';
import { chaosContext, scales, type ScenarioContext } from './scenario.js';
import { scenarios } from './scenarios/index.js';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 1e9));
const rows: Row[] = [];
let ctx: ScenarioContext;

beforeAll(async () => {
  ctx = chaosContext(scales.bounded, seed, await mkdtemp(join(tmpdir(), 'hermes-chaos-')), () => undefined);
});

afterAll(async () => {
  if (!ctx) return;
  console.log(`\nFault-injection suite, bounded scale, seed ${seed}:\n${formatTable(rows)}`);
  if (rows.length === scenarios.length && rows.every(passed)) await rm(ctx.logDir, { recursive: true, force: true });
  else console.log(`Process logs: ${ctx.logDir}`);
});

describe(`fault injection (bounded scale, seed ${seed})`, () => {
  for (const s of scenarios) {
    it(`${s.name}: nothing lost, nothing run twice, every turn cut is unknown only on a stopped worker, and it recovers`, async () => {
      const row = await s.run(ctx);
      rows.push(row);
      expect(row.findings, `${s.name} (seed ${seed}, logs in ${ctx.logDir}/${s.id})`).toEqual([]);
      expect(row.admissions).toBeGreaterThan(0);
      expect(row.recoverySeconds).toBeDefined();
    }, 300_000);
  }
});
