// Redis restarted between the admission commit and the enqueue: the message is accepted (it is
// in Postgres), the job is lost with Redis, and the outbox sweeper delivers the reply anyway.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAdmission } from '../../services/core/index.js';
import { startGatewayOn } from '../../services/cli/gateway.js';
import type { RunningGateway } from '../../services/gateway/index.js';
import type { RunningWorker } from '../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../support/services.js';
import { startFakeOpenAI, lastUser, type FakeOpenAI } from '../support/fake-openai.js';
import { privateRedis, type PrivateRedis } from '../support/redis-server.js';
import { createTestAgent, openTestRuntime, startTestWorker, testApiKey, type TestRuntime } from '../support/system.js';

let database: TestDatabase;
let redis: PrivateRedis;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let gateway: RunningGateway;

beforeAll(async () => {
  database = await createTestDatabase();
  redis = await privateRedis();
  await redis.start();
  model = await startFakeOpenAI((b) => ({ text: `reply to ${lastUser(b)}` }));
  rt = await openTestRuntime(testConfig(database.url, { REDIS_URL: redis.url, HERMES_PORT: 0, HERMES_HOST: '127.0.0.1' }));
  await createTestAgent(rt, model.baseURL);
  gateway = await startGatewayOn(rt);
});

afterAll(async () => {
  await gateway?.close();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await redis?.cleanup();
  await database?.drop();
});

const post = async (content: string) => {
  const res = await fetch(`${gateway.url}/v1/agents/default/demo/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${testApiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ content }),
  });
  return { status: res.status, ...((await res.json()) as { admissionId: string }) };
};

const terminal = (admissionId: string) => eventually(async () => {
  const a = await getAdmission(rt.db.pool, admissionId);
  return a?.state === 'terminal' ? a : undefined;
}, `admission ${admissionId} terminal`, 60_000, 200);

describe('Redis lost between commit and enqueue', () => {
  it('the job dies with Redis; the sweeper re-enqueues it from Postgres and the reply arrives', async () => {
    // No worker yet: the job waits in Redis, which then restarts empty (no persistence).
    const sent = await post('survive the restart');
    expect(sent.status).toBe(202);
    expect((await getAdmission(rt.db.pool, sent.admissionId))?.state).toBe('queued');
    await redis.stop();
    await redis.start();

    worker = await startTestWorker(rt);
    const done = await terminal(sent.admissionId);
    expect(done.outcome).toBe('completed');
    const r = await fetch(`${gateway.url}/v1/agents/default/demo/admissions/${sent.admissionId}`, { headers: { authorization: `Bearer ${testApiKey}` } });
    expect(((await r.json()) as { reply: { content: string } }).reply.content).toBe('reply to survive the restart');
    expect(model.requests.filter((q) => lastUser(q.body) === 'survive the restart')).toHaveLength(1);
    const requeued = (await rt.metrics.sweeperRequeued.get()).values[0]?.value ?? 0;
    expect(requeued).toBeGreaterThanOrEqual(1);
  });

  it('accepts a message while Redis is down, and answers it once Redis is back', async () => {
    await redis.stop();
    const sent = await post('sent during the outage');
    expect(sent.status).toBe(202);
    expect((await getAdmission(rt.db.pool, sent.admissionId))?.state).toBe('queued');
    await redis.start();
    expect((await terminal(sent.admissionId)).outcome).toBe('completed');
    expect(model.requests.filter((q) => lastUser(q.body) === 'sent during the outage')).toHaveLength(1);
  });
});
