// The scheduler as `hermes worker` runs it — its own process, no test hooks, the real clock: a
// CronJob that is due fires, its turn runs against the model, and the run ends completed and
// delivered (`deliver: local`). The other cron tests drive cronTick directly or listen to each
// tick (onTick), so they could not see a scheduler that never ticks without a listener. A
// `deliver: webhook` result reaches the Agent's signed callbackUrl as a `cron` callback.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cronHistory } from '../../../services/core/index.js';
import { cronJobSchema } from '../../../operator/api/cronjob.js';
import { upsertSchedule } from '../../../operator/cron/store.js';
import { lastUser, startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/fake-webhook.js';
import { createTestAgent, openTestRuntime, spawnTestWorker, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let rt: TestRuntime;
let model: FakeOpenAI;
let worker: ChildProcess | undefined;
let receiver: WebhookReceiver;
const HOOK_SECRET = 'whsec-cron-fires';

beforeAll(async () => {
  database = await createTestDatabase();
  rt = await openTestRuntime(testConfig(database.url), 'cron-fires');
  model = await startFakeOpenAI((b: ChatRequestBody) => ({ text: `done: ${lastUser(b)}` }));
  receiver = await startWebhookReceiver(HOOK_SECRET);
  await createTestAgent(rt, model.baseURL, {
    platforms: [{ type: 'webhook', credentialsSecret: 'hooks', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention', callbackUrl: receiver.url }],
  });
});

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    const exited = new Promise((resolve) => worker!.once('exit', resolve));
    worker.kill('SIGKILL');
    await exited;
  }
  await model?.close();
  await receiver?.close();
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
    const hooked = cronJobSchema.parse({
      apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob', metadata: { name: 'to-hook', namespace: 'default' },
      spec: { agentRef: { name: 'demo' }, schedule: '@every 1m', prompt: 'report to the hook', deliver: 'webhook' },
    });
    await upsertSchedule(rt.db, hooked, new Date(Date.now() - 1_000));
    worker = spawnTestWorker(rt.config, { WEBHOOK_SECRET: HOOK_SECRET, HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY,WEBHOOK_SECRET' });
    // The history shows the turn's outcome as soon as it ends, before the next tick copies it into the run.
    const run = await eventually(async () => {
      const [latest] = (await cronHistory(rt.db.pool, 'default', 'due-now')) ?? [];
      return latest?.outcome === 'completed' && latest.deliveryState === 'delivered' ? latest : undefined;
    }, 'the due slot to fire, run and be delivered', 60_000, 200);
    expect(run).toMatchObject({ trigger: 'schedule', state: 'dispatched' });
    expect(model.requests.some((r) => lastUser(r.body).includes('say the time'))).toBe(true);
    const { rows } = await rt.db.pool.query<{ next_run_at: Date }>(`SELECT next_run_at FROM cron_schedules WHERE name = 'due-now'`);
    expect(rows[0]!.next_run_at.getTime()).toBeGreaterThan(Date.now());

    // deliver: webhook — one signed POST naming the CronJob, keyed by the obligation.
    const [hookRun] = await eventually(async () => {
      const h = (await cronHistory(rt.db.pool, 'default', 'to-hook')) ?? [];
      return h[0]?.deliveryState === 'delivered' ? h : undefined;
    }, 'the webhook run delivered', 60_000, 200);
    expect(receiver.calls).toHaveLength(1);
    expect(receiver.calls[0]).toMatchObject({ signed: true, idempotencyKey: hookRun!.obligationId, body: { type: 'cron', cron_job: 'default/to-hook', admission_id: hookRun!.admissionId, text: 'done: report to the hook' } });
  }, 90_000);
});
