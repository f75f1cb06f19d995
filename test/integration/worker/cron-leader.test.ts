// Exactly one active CronJob scheduler across workers (runAsLeader, a Postgres advisory lock): two
// schedulers campaign, one ticks; when the leader's session is killed the other takes over, and
// every slot is fired exactly once across the handover. The clock is injected.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cronHistory, type Leadership } from '../../../services/core/index.js';
import { startCronScheduler, type CronDeps } from '../../../services/worker/index.js';
import { cronJobSchema } from '../../../operator/api/cronjob.js';
import { upsertSchedule } from '../../../operator/cron/store.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let rt: TestRuntime;
const running: Leadership[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  rt = await openTestRuntime(testConfig(database.url), 'cron-leader');
  await createTestAgent(rt, 'http://127.0.0.1:9/v1');
});

afterAll(async () => {
  for (const l of running) await l.stop();
  await rt?.close();
  await database?.drop();
});

const T0 = new Date('2031-03-03T08:00:00Z');
let clock = new Date(T0.getTime() - 30_000);

describe('cron scheduler leadership', () => {
  it('one scheduler ticks; after the leader dies the other fires the next slot, and no slot fires twice', async () => {
    const job = cronJobSchema.parse({
      apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob', metadata: { name: 'leader', namespace: 'default' },
      spec: { agentRef: { name: 'demo' }, schedule: '* * * * *', prompt: 'tick', concurrencyPolicy: 'Allow' },
    });
    await upsertSchedule(rt.db, job, T0);
    const deps: CronDeps = { db: rt.db, queues: rt.queues, redis: rt.redis, log: rt.log, prefix: rt.config.HERMES_QUEUE_PREFIX };
    const ticks = { a: 0, b: 0 };
    const start = (who: 'a' | 'b') => {
      const l = startCronScheduler(deps, {
        databaseUrl: database.url, tickSeconds: 60, now: () => clock,
        wait: (_ms, signal) => new Promise<void>((r) => { const t = setTimeout(r, 20); signal.addEventListener('abort', () => { clearTimeout(t); r(); }, { once: true }); }),
        tuning: { pingMs: 100, pingTimeoutMs: 500, connectTimeoutMs: 1_000, initialBackoffMs: 50, maxBackoffMs: 200 },
        onTick: () => { ticks[who]++; },
      });
      running.push(l);
      return l;
    };
    const a = start('a');
    const b = start('b');
    await eventually(() => a.leading !== b.leading, 'one leads');
    const [leader, follower] = a.leading ? (['a', 'b'] as const) : (['b', 'a'] as const);
    await eventually(() => ticks[leader] > 2, 'the leader ticks');
    expect(ticks[follower]).toBe(0);

    clock = new Date(T0.getTime() + 5_000);
    const slots = async () => ((await cronHistory(rt.db.pool, 'default', 'leader')) ?? []).map((r) => `${r.slot.toISOString()} ${r.state}`);
    await eventually(async () => (await slots()).length === 1 || undefined, 'the 08:00 slot fired');

    // The leader's Postgres session dies: its lock goes with it.
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
    await admin.end();
    clock = new Date(T0.getTime() + 65_000);
    await eventually(async () => (await slots()).length === 2 || undefined, 'the 08:01 slot fired after the handover');
    await eventually(() => (a.leading || b.leading) && a.leading !== b.leading, 'exactly one leads again');
    expect(await slots()).toEqual([`${new Date(T0.getTime() + 60_000).toISOString()} dispatched`, `${T0.toISOString()} dispatched`]);
    const { rows } = await rt.db.pool.query(`SELECT count(*)::int AS n FROM admissions WHERE platform = 'cron'`);
    expect(rows[0].n).toBe(2);
  });
});
