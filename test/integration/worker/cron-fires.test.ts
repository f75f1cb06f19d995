// The scheduler as `hermes worker` runs it — its own process, no test hooks, the real clock: a
// CronJob that is due fires, its turn runs against the model, and the run ends completed and
// delivered (`deliver: local`). The other cron tests drive cronTick directly or listen to each
// tick (onTick), so they could not see a scheduler that never ticks without a listener.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cronHistory } from '../../../services/core/index.js';
import { cronJobSchema } from '../../../operator/api/cronjob.js';
import { upsertSchedule } from '../../../operator/cron/store.js';
import { lastUser, startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, spawnTestWorker, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let rt: TestRuntime;
let model: FakeOpenAI;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
  rt = await openTestRuntime(testConfig(database.url), 'cron-fires');
  model = await startFakeOpenAI((b: ChatRequestBody) => ({ text: `done: ${lastUser(b)}` }));
  await createTestAgent(rt, model.baseURL);
});

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    const exited = new Promise((resolve) => worker!.once('exit', resolve));
    worker.kill('SIGKILL');
    await exited;
  }
  await model?.close();
  await rt?.close();
  await database?.drop();
});

describe('hermes worker\'s cron scheduler', () => {
  it('fires a due CronJob on its own, and the run completes and is delivered', async () => {
    const job = cronJobSchema.parse({
      apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob', metadata: { name: 'due-now', namespace: 'default' },
      spec: { agentRef: { name: 'demo' }, schedule: '@every 1m', prompt: 'say the time', deliver: 'local' },
    });
    await upsertSchedule(rt.db, job, new Date(Date.now() - 1_000));
    worker = spawnTestWorker(rt.config);
    // The history shows the turn's outcome as soon as it ends, before the next tick copies it into the run.
    const run = await eventually(async () => {
      const [latest] = (await cronHistory(rt.db.pool, 'default', 'due-now')) ?? [];
      return latest?.outcome === 'completed' && latest.deliveryState === 'delivered' ? latest : undefined;
    }, 'the due slot to fire, run and be delivered', 60_000, 200);
    expect(run).toMatchObject({ trigger: 'schedule', state: 'dispatched' });
    expect(model.requests.some((r) => lastUser(r.body).includes('say the time'))).toBe(true);
    const { rows } = await rt.db.pool.query<{ next_run_at: Date }>(`SELECT next_run_at FROM cron_schedules WHERE name = 'due-now'`);
    expect(rows[0]!.next_run_at.getTime()).toBeGreaterThan(Date.now());
  }, 90_000);
});
