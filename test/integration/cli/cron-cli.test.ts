// `hermes cron` as an operator runs it (the real binary against a real Postgres): list, run now
// (the request the scheduler's next tick fires), history with a skipped slot's reason, and clear
// errors for a CronJob that does not exist.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb, type Db } from '../../../services/core/index.js';
import { cronJobSchema } from '../../../operator/index.js';
import { upsertSchedule } from '../../../operator/cron/store.js';
import { runHermes } from '../../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';

let database: TestDatabase;
let db: Db;

const hermes = (...args: string[]) => runHermes(args, { DATABASE_URL: database.url });

beforeAll(async () => {
  database = await createTestDatabase();
  db = openDb(database.url);
  const job = cronJobSchema.parse({
    apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob', metadata: { name: 'digest', namespace: 'team' },
    spec: { agentRef: { name: 'ops' }, schedule: '0 9 * * 1-5', timeZone: 'Europe/Paris', prompt: 'digest' },
  });
  await upsertSchedule(db, job, new Date('2031-01-06T08:00:00Z'));
  const { rows } = await db.pool.query<{ id: string }>(`SELECT id FROM cron_schedules WHERE name = 'digest'`);
  await db.pool.query(`INSERT INTO cron_runs (id, schedule_id, slot, state, reason, outcome, finished_at) VALUES (gen_random_uuid(), $1, '2031-01-03T08:00:00Z', 'skipped', 'Missed: the scheduler did not run', 'skipped', now())`, [rows[0]!.id]);
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
});

describe('hermes cron', () => {
  it('lists CronJobs, asks for a run now, and shows the history', async () => {
    const list = await hermes('cron', 'list');
    expect(list.stdout).toMatch(/team\/digest\s+0 9 \* \* 1-5\s+Europe\/Paris\s+false\s+-\s+2031-01-06T08:00:00Z/);

    const run = await hermes('cron', 'run', 'team/digest');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Asked for a run of team/digest now');
    const { rows } = await db.pool.query(`SELECT run_now_at FROM cron_schedules WHERE name = 'digest'`);
    expect(rows[0].run_now_at).toBeInstanceOf(Date);

    const history = await hermes('cron', 'history', 'digest', '-n', 'team');
    expect(history.stdout).toMatch(/2031-01-03T08:00:00Z\s+schedule\s+-\s+\S+\s+skipped \(Missed: the scheduler did not run\)/);
    const json = await hermes('cron', 'history', 'team/digest', '--json');
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ state: 'skipped', outcome: 'skipped', trigger: 'schedule' });
  });

  it('says what is wrong with a name or a limit', async () => {
    const missing = await hermes('cron', 'run', 'team/nope');
    expect([missing.code, missing.stderr.trim()]).toEqual([2, 'no CronJob team/nope in this database (see hermes cron list)']);
    const bad = await hermes('cron', 'history', 'a/b/c');
    expect(bad.stderr).toContain('name the CronJob as NAMESPACE/NAME or NAME (got "a/b/c")');
    const limit = await hermes('cron', 'history', 'team/digest', '--limit', 'x');
    expect(limit.stderr).toContain('--limit must be a positive whole number (got "x")');
    const help = await hermes('cron', '--help');
    expect(help.stdout).toMatch(/list[\s\S]*run[\s\S]*history/);
  });
});
