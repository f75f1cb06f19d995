// `make bench-kanban` (and `make bench`): the Kanban dispatcher's tick over 10 000 tasks, next to
// raw Postgres baselines measured in the same run on the same tables.
//   board: 10 000 tasks on one board, assigned round-robin to 10 agents; half are roots, half
//   wait for a root (one link each). The clock is injected, so the claim TTL passes at once.
//   1. first tick: promotes the 5 000 roots to ready and claims 64 of them (64 admissions);
//   2. idle tick: nothing due, every step scans the board (p50 / p95 of 30 ticks);
//   3. reclaim tick: the 64 claims expired (never started): 64 reclaimed, 64 new claims.
//   Baselines: a raw SELECT of the tasks the promotion looks at (the same predicate), a raw
//   UPDATE + INSERT claim transaction on one row, and raw single-row insert+commit.
// BENCH_SCALE scales the task count (default 1 = 10 000). Needs DATABASE_URL (no Redis: claimed
// admissions are recorded, not enqueued).
import { randomUUID } from 'node:crypto';
import { createLogger, dispatchTick, namedBoard, openDb, publishRevision, type Db, type DispatchPolicy, type TickDeps } from '../services/core/index.js';
import { createTestDatabase } from '../test/support/services.js';
import { testAgent } from '../test/support/system.js';
import { pgCommitRate } from './baselines.js';
import { summarize, type Summary } from './percentiles.js';

const scale = Number(process.env.BENCH_SCALE ?? '1');
const tasks = Math.max(100, Math.round(10_000 * scale));
const progress = (s: string) => process.stderr.write(`[bench:kanban] ${s}\n`);
const ms = (n: number) => n.toFixed(n < 10 ? 2 : 1);
const basePolicy: DispatchPolicy = { failureLimit: 2, claimTtlSeconds: 900, staleSeconds: 1800, maxRuntimeSeconds: 14_400, claimsPerTick: 64 };

async function timed(runs: number, fn: () => Promise<unknown>): Promise<Summary> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return summarize(out);
}

async function seed(db: Db, boardId: string, agents: string[]): Promise<void> {
  const half = Math.floor(tasks / 2);
  await db.pool.query(
    `INSERT INTO kanban_tasks (id, board_id, title, assignee_agent_id, status, created_by, created_at, updated_at)
     SELECT 'b_' || g, $1, 'task ' || g, ($2::uuid[])[1 + g % array_length($2::uuid[], 1)], 'todo', 'bench', now(), now() FROM generate_series(1, $3) g`,
    [boardId, agents, tasks]);
  await db.pool.query(`INSERT INTO kanban_links (parent_id, child_id) SELECT 'b_' || g, 'b_' || (g + $1) FROM generate_series(1, $1) g`, [half]);
  await db.pool.query('ANALYZE');
}

/** Raw: the rows the promotion looks at, with the same predicate, no writes. */
const rawScan = (db: Db) => db.pool.query(
  `SELECT t.id FROM kanban_tasks t WHERE t.status IN ('todo', 'scheduled') AND NOT EXISTS
     (SELECT 1 FROM kanban_links l JOIN kanban_tasks p ON p.id = l.parent_id WHERE l.child_id = t.id AND p.status <> 'done')`);

/** Raw: a compare-and-swap claim of one row and its run row, in one transaction (then undone, for the next sample). */
async function rawClaim(db: Db, id: string): Promise<void> {
  const run = randomUUID();
  await db.tx(async (sql) => {
    await sql.query(`UPDATE kanban_tasks SET status = 'running', claim_lock = $2 WHERE id = $1 AND status = 'ready' AND claim_lock IS NULL`, [id, run]);
    await sql.query(`INSERT INTO kanban_runs (id, task_id, agent_id, claimed_at, heartbeat_at) SELECT $2, id, assignee_agent_id, now(), now() FROM kanban_tasks WHERE id = $1`, [id, run]);
  });
  await db.pool.query(`UPDATE kanban_tasks SET status = 'ready', claim_lock = NULL WHERE id = $1`, [id]);
}

async function main(): Promise<void> {
  const database = await createTestDatabase({ prefix: 'hermes_bench' });
  const db = openDb(database.url, { max: 4 });
  try {
    progress(`seeding ${tasks} tasks on one board, 10 agents…`);
    const agents: string[] = [];
    for (let i = 0; i < 10; i++) agents.push((await publishRevision(db, testAgent('http://127.0.0.1:9', { agent: { namespace: 'bench', name: `a${i}` } }))).agentId);
    const board = await namedBoard(db.pool, { namespace: 'bench', agent: 'a0', board: 'load' }, true);
    await seed(db, board.id, agents);

    progress('baselines: raw scan, raw claim, raw commit…');
    const scan = await timed(30, () => rawScan(db));
    const commit = await pgCommitRate(database.url, 1, 2_000);

    let now = new Date('2026-03-01T00:00:00Z');
    const policy = { ...basePolicy };
    const deps: TickDeps = { db, queuePrefix: 'bench', policy, log: createLogger('bench', 'silent'), rule: { instanceTtlSeconds: 60, steady: true } };
    progress('dispatcher: first tick (promotion + claims)…');
    let t = performance.now();
    const first = await dispatchTick(deps, now);
    const firstMs = performance.now() - t;
    const readyId = (await db.pool.query<{ id: string }>(`SELECT id FROM kanban_tasks WHERE status = 'ready' LIMIT 1`)).rows[0]!.id;
    const claim = await timed(30, () => rawClaim(db, readyId));

    progress('dispatcher: idle ticks…');
    now = new Date(now.getTime() + 1_000);
    const steps: Record<string, number[]> = {};
    const idle = await timed(30, async () => {
      policy.claimsPerTick = 0;
      const r = await dispatchTick(deps, now);
      for (const [k, v] of Object.entries(r.ms)) (steps[k] ??= []).push(v);
    });
    policy.claimsPerTick = basePolicy.claimsPerTick;

    progress('dispatcher: reclaim tick…');
    now = new Date(now.getTime() + 901_000);
    t = performance.now();
    const re = await dispatchTick(deps, now);
    const reMs = performance.now() - t;

    console.log(`\nKanban dispatcher, ${tasks.toLocaleString('en-US')} tasks (${Math.floor(tasks / 2)} linked), 10 agents, 64 claims per tick`);
    console.log('\nRaw baselines (same run)');
    console.log(`  postgres insert+commit, 1 client              ${ms(1_000 / commit.perSecond).padStart(8)} ms`);
    console.log(`  raw scan of the promotion predicate           ${ms(scan.p50).padStart(8)} ms p50  ${ms(scan.p95).padStart(8)} ms p95`);
    console.log(`  raw CAS claim (UPDATE + INSERT, one tx)       ${ms(claim.p50).padStart(8)} ms p50  ${ms(claim.p95).padStart(8)} ms p95`);
    console.log('\nDispatcher ticks');
    console.log(`  first: promoted ${first.promoted}, claimed ${first.claimed.length}          ${ms(firstMs).padStart(8)} ms   (${ms(firstMs / Math.max(1, first.claimed.length))} ms per claimed task)`);
    console.log(`  idle (nothing due)                            ${ms(idle.p50).padStart(8)} ms p50  ${ms(idle.p95).padStart(8)} ms p95   (${(idle.p50 / scan.p50).toFixed(1)}× the raw scan)`);
    console.log(`  reclaim: reclaimed ${re.reclaimed}, claimed ${re.claimed.length}         ${ms(reMs).padStart(8)} ms   (${ms(reMs / Math.max(1, re.reclaimed + re.claimed.length))} ms per run ended or started; raw claim ${ms(claim.p50)} ms)`);
    const byStep = (r: Record<string, number>) => Object.entries(r).map(([k, v]) => `${k} ${ms(v)}`).join(', ');
    console.log(`  first tick by step (ms): ${byStep(first.ms)}`);
    console.log(`  reclaim tick by step (ms): ${byStep(re.ms)}`);
    console.log(`  idle tick by step (p50 ms): ${Object.entries(steps).map(([k, v]) => `${k} ${ms(summarize(v).p50)}`).join(', ')}`);
    if (first.claimed.length === 0 || re.reclaimed === 0) process.exitCode = 1;
  } finally {
    await db.close();
    await database.drop();
  }
}

await main();
