// The worker half of the spine: admission → job → lease → started → model → terminal +
// obligation → delivered, on real Postgres and Redis with a fake model behind the openai SDK.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission, getObligationForAdmission, listMessages } from '../../../services/core/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, withoutSessionFacts, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, deliveredObligation, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let agentId: string;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((b) => ({ text: `echo: ${lastUser(b)}` }));
  rt = await openTestRuntime(testConfig(database.url));
  agentId = await createTestAgent(rt, model.baseURL);
  worker = await startTestWorker(rt);
});

afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

const input = (content: string, key = 'agent:default/demo:api:dm:u1') =>
  ({ agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'u1' }, content, replyTarget: { kind: 'api' } });

async function terminal(admissionId: string) {
  return eventually(async () => {
    const a = await getAdmission(rt.db.pool, admissionId);
    return a?.state === 'terminal' ? a : undefined;
  }, `admission ${admissionId} terminal`);
}

describe('turn worker', () => {
  it('runs an admission to a delivered reply, with the persona and the conversation', async () => {
    const first = await admit(rt.db, input('hello'));
    await enqueueTurn(rt.queues, { admissionId: first.admissionId });
    const a = await terminal(first.admissionId);
    expect(a.outcome).toBe('completed');
    const ob = await deliveredObligation(rt.db.pool, first.admissionId, 'delivered obligation');
    expect(ob.content).toBe('echo: hello');

    const second = await admit(rt.db, input('again'));
    await enqueueTurn(rt.queues, { admissionId: second.admissionId });
    await terminal(second.admissionId);
    const req = model.requests.find((r) => lastUser(r.body) === 'again')!;
    const sent = withoutSessionFacts(req.body.messages);
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(sent[0]!.content).toBe('You are the test agent.');
    expect(sent[2]!.content).toBe('echo: hello');
    const transcript = await listMessages(rt.db.pool, first.sessionId);
    expect(transcript.map((m) => [m.seq, m.role])).toEqual([[1, 'user'], [2, 'assistant'], [3, 'user'], [4, 'assistant']]);
  });

  it('re-enqueues an admission whose job was lost between commit and enqueue (outbox sweeper)', async () => {
    const lost = await admit(rt.db, input('never enqueued', 'agent:default/demo:api:dm:u2'));
    const a = await terminal(lost.admissionId);
    expect(a.outcome).toBe('completed');
    expect((await getObligationForAdmission(rt.db.pool, lost.admissionId))?.content).toBe('echo: never enqueued');
  });

  it('records a model failure as a failed turn with a reply the user can read', async () => {
    model.setScript((b) => (lastUser(b) === 'boom' ? { status: 401, errorMessage: 'bad key' } : { text: `echo: ${lastUser(b)}` }));
    const adm = await admit(rt.db, input('boom', 'agent:default/demo:api:dm:u3'));
    await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
    const a = await terminal(adm.admissionId);
    expect(a.outcome).toBe('failed');
    expect(a.error).toContain('401');
    expect((await getObligationForAdmission(rt.db.pool, adm.admissionId))?.content).toMatch(/credentials/);
    model.setScript((b) => ({ text: `echo: ${lastUser(b)}` }));
  });
});
