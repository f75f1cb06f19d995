// Compression inside the worker: over the threshold the older conversation becomes a summary
// (a marker row in the transcript; later turns start from it), a context overflow from the
// provider compresses and retries, at most 3 times, and `/compress` runs it on demand.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, appendMessage, enqueueTurn, getAdmission, getObligationForAdmission, listTranscript } from '../../../services/core/index.js';
import { SUMMARY_INSTRUCTION } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type ChatRequestBody, type FakeOpenAI, type Script } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';
import { recordingClock } from './helpers.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let overflowing = 0;

const isSummary = (b: ChatRequestBody) => b.messages[0]?.content === SUMMARY_INSTRUCTION;
function script(b: ChatRequestBody): Script {
  if (isSummary(b)) return { text: 'SUMMARY: they talked a lot.' };
  if (overflowing > 0) {
    overflowing--;
    return { status: 400, errorMessage: "This model's maximum context length is 1000 tokens" };
  }
  return { text: `answer to ${lastUser(b)}` };
}

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url));
  worker = await startTestWorker(rt, { loop: { clock: recordingClock() } });
});
afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

async function conversation(name: string, contextWindow: number, seeded: number) {
  const agentId = await createTestAgent(rt, model.baseURL, {
    agent: { namespace: 'default', name },
    model: { provider: 'openai', model: 'gpt-test', baseURL: model.baseURL, apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' }, contextWindow },
  });
  const key = `agent:default/${name}:api:dm:u1`;
  const say = async (content: string) => {
    const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'u1' }, content, replyTarget: { kind: 'api' } });
    await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
    const a = await eventually(async () => {
      const row = await getAdmission(rt.db.pool, adm.admissionId);
      return row?.state === 'terminal' ? row : undefined;
    }, 'terminal');
    return { a, sessionId: adm.sessionId, reply: (await getObligationForAdmission(rt.db.pool, adm.admissionId))!.content };
  };
  const { sessionId } = await say('start');
  for (let i = 0; i < seeded; i++) {
    await appendMessage(rt.db.pool, sessionId, { role: i % 2 ? 'assistant' : 'user', content: `old ${i} ${'lorem ipsum '.repeat(20)}` });
  }
  return { say, sessionId };
}

const requestsFor = (content: string) => model.requests.filter((r) => !isSummary(r.body) && lastUser(r.body) === content);

describe('compression in the worker', () => {
  it('summarises the older conversation over the threshold and keeps the last 20 messages verbatim', async () => {
    const { say, sessionId } = await conversation('long', 2_000, 30);
    const summariesBefore = model.requests.filter((r) => isSummary(r.body)).length;
    const { reply } = await say('and now?');
    expect(reply).toBe('answer to and now?');
    expect(model.requests.filter((r) => isSummary(r.body)).length).toBe(summariesBefore + 1);
    const sent = requestsFor('and now?')[0]!.body.messages;
    expect(sent[0]!.role).toBe('system');
    expect(sent[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(sent.slice(2)).toHaveLength(20);
    expect(sent.at(-1)!.content).toBe('and now?');

    const marker = (await listTranscript(rt.db.pool, sessionId)).find((m) => m.role === 'system')!;
    expect(marker.content).toMatch(/^\[compressed through message \d+\]\n\[Summary of the earlier conversation\]/);
    // The next turn starts from the stored summary (nothing before it is re-sent).
    await say('next');
    const next = requestsFor('next')[0]!.body.messages;
    expect(next[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(JSON.stringify(next)).not.toContain('old 0 ');
  });

  it('compresses and retries on a context overflow, and gives up after 3 attempts with a /new hint', async () => {
    const { say } = await conversation('overflow', 1_000_000, 30);
    overflowing = 1;
    expect((await say('retry me')).reply).toBe('answer to retry me');
    expect(requestsFor('retry me')).toHaveLength(2);

    overflowing = 100;
    const { a, reply } = await say('hopeless');
    overflowing = 0;
    expect(a.outcome).toBe('failed');
    expect(reply).toMatch(/too long for the model even after compression.*\/new/);
    expect(requestsFor('hopeless')).toHaveLength(4); // the first call + one per compression
  });

  it('/compress runs on demand without a model answer turn', async () => {
    const { say } = await conversation('ondemand', 1_000_000, 30);
    const { reply } = await say('/compress');
    expect(reply).toMatch(/^Compressed \d+ earlier messages into a model-written summary\.$/);
    expect(requestsFor('/compress')).toHaveLength(0);
    await say('after');
    const sent = requestsFor('after')[0]!.body.messages;
    expect(sent[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(sent.map((m) => m.content)).not.toContain('/compress');
  });
});
