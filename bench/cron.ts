// `make bench-cron` (or `hack/bench.sh cron`): the CronJob scheduler with 10 000 CronJobs (BENCH_SCALE
// scales it) of mixed schedules and time zones, on real Postgres and Redis. The clock is injected:
// the scheduler ticks at a minute boundary where a few thousand slots are due at once. Prints the
// scheduler's CPU per tick (the busy boundary tick and an idle tick), the tick's wall time, and
// the dispatch lag per run (from the tick's start to the run's turn enqueued: p50/p99/max), next to
// raw Postgres baselines of the same run: for the same due rows, the least a scheduler must write —
// the row locked, next_run_at advanced and one row inserted — one transaction per row, and 50 rows
// per transaction (as the scheduler chunks), at the same parallelism, with no planning, no
// admission and no queue.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { connectRedis, createLogger, openDb, openQueues, parseSchedule, publishRevision } from '../services/core/index.js';
import { cronTick, type CronDeps } from '../services/worker/index.js';
import { createTestDatabase } from '../test/support/services.js';
import { serverUrls } from '../test/support/services.js';
import { testAgent } from '../test/support/system.js';

const progress = (s: string) => process.stderr.write(`[bench:cron] ${s}\n`);
const scale = Number(process.env.BENCH_SCALE ?? '1');
const N = Math.max(100, Math.round(10_000 * scale));
const PARALLEL = 4;
const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** The boundary: Monday 09:30:00 UTC, when minute, 5-, 15-, 30-minute and weekday-09:30 schedules are all due. */
const BOUNDARY = new Date('2031-03-03T09:30:00Z');
const MIX: { schedule: string; timeZone: string }[] = [
  { schedule: '* * * * *', timeZone: 'UTC' },
  { schedule: '*/5 * * * *', timeZone: 'Europe/Berlin' },
  { schedule: '*/15 * * * *', timeZone: 'America/New_York' },
  { schedule: '30 9 * * 1-5', timeZone: 'UTC' },
  { schedule: '0 * * * *', timeZone: 'Asia/Kolkata' },
  { schedule: '0 9 * * *', timeZone: 'Europe/Paris' },
  { schedule: '@every 7m', timeZone: 'UTC' },
  { schedule: '45 23 * * 0', timeZone: 'Australia/Sydney' },
  { schedule: '0 0 1 * *', timeZone: 'America/Los_Angeles' },
  { schedule: '*/10 8-18 * * 1-5', timeZone: 'Europe/London' },
];

interface Lag { sorted: number[]; wallMs: number; cpuMs: number }
const summary = (l: Lag) => `tick ${fmt(l.wallMs, 0)} ms wall, ${fmt(l.cpuMs, 0)} ms CPU; lag p50 ${fmt(percentile(l.sorted, 50), 0)} ms, p99 ${fmt(percentile(l.sorted, 99), 0)} ms, max ${fmt(l.sorted.at(-1) ?? 0, 0)} ms`;

/** Bulk-inserts the CronJobs, each with next_run_at computed from one minute before the boundary. */
async function seed(db: pg.Pool, n: number): Promise<number> {
  const from = new Date(BOUNDARY.getTime() - 60_000);
  const rows = Array.from({ length: n }, (_, i) => {
    const m = MIX[i % MIX.length]!;
    const next = parseSchedule(m.schedule, m.timeZone).next(from);
    return { name: `job-${i}`, ...m, next };
  });
  for (let i = 0; i < rows.length; i += 2_000) {
    const chunk = rows.slice(i, i + 2_000);
    await db.query(
      `INSERT INTO cron_schedules (id, namespace, name, agent_name, schedule, time_zone, spec, hash, suspend, next_run_at)
       SELECT gen_random_uuid(), 'default', n, 'demo', s, z, jsonb_build_object('prompt', 'report ' || n, 'concurrencyPolicy', 'Allow'), 'h', false, t
       FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS u(n, s, z, t)`,
      [chunk.map((r) => r.name), chunk.map((r) => r.schedule), chunk.map((r) => r.timeZone), chunk.map((r) => r.next)]);
  }
  return rows.filter((r) => r.next <= BOUNDARY).length;
}

/** The raw floor: per due row, lock it, advance next_run_at, insert one row; `chunk` rows per transaction; same parallelism. */
async function rawBaseline(url: string, chunk: number): Promise<Lag> {
  const pool = new pg.Pool({ connectionString: url, max: PARALLEL });
  await pool.query(`CREATE TABLE IF NOT EXISTS bench_raw_runs (id uuid primary key, schedule_id uuid, slot timestamptz)`);
  // The rows the scheduler fired, read before the clock starts (the scheduler's own due read is inside its tick).
  const { rows: due } = await pool.query<{ id: string; next_run_at: Date }>(`SELECT schedule_id AS id, slot AS next_run_at FROM cron_runs WHERE state <> 'skipped'`);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const lags: number[] = [];
  let i = 0;
  await Promise.all(Array.from({ length: PARALLEL }, async () => {
    const c = await pool.connect();
    try {
      while (i < due.length) {
        const rows = due.slice(i, i + chunk);
        i += chunk;
        await c.query('BEGIN');
        await c.query(`SELECT id FROM cron_schedules WHERE id = ANY($1::uuid[]) FOR UPDATE SKIP LOCKED`, [rows.map((r) => r.id)]);
        for (const row of rows) {
          await c.query(`UPDATE cron_schedules SET next_run_at = next_run_at + interval '1 minute' WHERE id = $1`, [row.id]);
          await c.query(`INSERT INTO bench_raw_runs VALUES ($1, $2, $3)`, [randomUUID(), row.id, row.next_run_at]);
        }
        await c.query('COMMIT');
        for (let k = 0; k < rows.length; k++) lags.push(performance.now() - t0);
      }
    } finally {
      c.release();
    }
  }));
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await pool.end();
  return { sorted: lags.sort((a, b) => a - b), wallMs, cpuMs: (cpu.user + cpu.system) / 1_000 };
}

async function main(): Promise<void> {
  const { redisUrl } = serverUrls();
  progress(`fresh database; seeding ${N} CronJobs of ${MIX.length} schedules in ${new Set(MIX.map((m) => m.timeZone)).size} time zones…`);
  const database = await createTestDatabase();
  const db = openDb(database.url, { max: 10 });
  const redis = connectRedis(redisUrl);
  const prefix = `bench-cron-${randomUUID().slice(0, 8)}`;
  const queues = openQueues(redis, prefix);
  try {
    await publishRevision(db, testAgent('http://127.0.0.1:9/v1'));
    const due = await seed(db.pool, N);
    const deps: CronDeps = { db, queues, redis, log: createLogger('bench', 'warn'), prefix };

    progress(`busy tick at ${BOUNDARY.toISOString()} (${due} slots due)…`);
    const lags: number[] = [];
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const busy = await cronTick(deps, { now: BOUNDARY, parallel: PARALLEL, onDispatched: () => lags.push(performance.now() - t0) });
    const busyWall = performance.now() - t0;
    const busyCpu = process.cpuUsage(cpu0);
    if (busy.fired !== due) throw new Error(`expected ${due} runs fired, got ${busy.fired} (errors: ${busy.errors})`);

    progress('idle tick one second later (nothing due)…');
    const cpu1 = process.cpuUsage();
    const t1 = performance.now();
    const idle = await cronTick(deps, { now: new Date(BOUNDARY.getTime() + 1_000), parallel: PARALLEL });
    const idleWall = performance.now() - t1;
    const idleCpu = process.cpuUsage(cpu1);
    if (idle.fired !== 0) throw new Error(`the idle tick fired ${idle.fired}`);

    progress('raw Postgres baselines over the same due rows…');
    const raw = await rawBaseline(database.url, 1);
    const rawChunked = await rawBaseline(database.url, 50);
    const system: Lag = { sorted: lags.sort((a, b) => a - b), wallMs: busyWall, cpuMs: (busyCpu.user + busyCpu.system) / 1_000 };
    const ratio = (r: Lag) => `wall ×${fmt(system.wallMs / r.wallMs)}, lag p99 ×${fmt(percentile(system.sorted, 99) / percentile(r.sorted, 99))}, CPU ×${fmt(system.cpuMs / r.cpuMs)}`;

    console.log(`\nCronJob scheduler: ${N} CronJobs, ${due} due at the minute boundary, ${PARALLEL} writers`);
    console.log(`  scheduler    ${summary(system)}`);
    console.log(`  raw pg       ${summary(raw)}   (lock + advance + insert, one transaction per row)`);
    console.log(`  raw pg ×50   ${summary(rawChunked)}   (the same, 50 rows per transaction, as the scheduler chunks)`);
    console.log(`  ratio        vs raw: ${ratio(raw)}; vs raw ×50: ${ratio(rawChunked)}`);
    console.log(`  per run      scheduler ${fmt(system.wallMs / due, 2)} ms, raw ${fmt(raw.wallMs / due, 2)} ms, raw ×50 ${fmt(rawChunked.wallMs / due, 2)} ms; scheduler CPU ${fmt((system.cpuMs * 1_000) / due, 0)} µs per fired run`);
    console.log(`  idle tick    ${fmt(idleWall, 0)} ms wall, ${fmt((idleCpu.user + idleCpu.system) / 1_000, 0)} ms CPU (${N} CronJobs, none due)`);
  } finally {
    await queues.turns.obliterate({ force: true }).catch(() => undefined);
    await queues.close();
    await redis.quit().catch(() => undefined);
    await db.close();
    await database.drop();
  }
}

await main();
