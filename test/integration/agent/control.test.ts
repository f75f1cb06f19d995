// /stop, /steer and /redirect sent through the message API while a turn runs: the gateway records
// the signal and announces it on the session's control channel; the worker's running turn acts
// on it. Real gateway app, worker, Postgres and Redis; the fake model sees connections close.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { admissionChannel, getAdmission, getObligationForAdmission, listTranscript } from '../../../services/core/index.js';
import { builtinRegistry, defineTool } from '../../../services/agent/index.js';
import { buildGatewayApp } from '../../../services/gateway/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type ChatRequestBody, type FakeOpenAI, type Script } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, testApiKey, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let app: FastifyInstance;
let sub: Redis;

// A tool that runs until the test lets it go, and never looks at its abort signal.
let toolStarted!: () => void;
let toolRunning = new Promise<void>((r) => { toolStarted = r; });
let releaseTool!: () => void;
const gate = defineTool({
  name: 'wait_for_go', description: 'Waits.', toolset: 'test', sideEffect: 'writes', schema: z.object({}).strict(),
  handler: () => new Promise<string>((resolve) => { releaseTool = () => resolve('went'); toolStarted(); }),
});
const armTool = () => { toolRunning = new Promise<void>((r) => { toolStarted = r; }); };

const never = new Promise<void>(() => undefined);
function script(b: ChatRequestBody): Script {
  const user = lastUser(b);
  const afterTool = b.messages.at(-1)!.role === 'tool';
  if (user === 'tell a long story') return { text: 'Once upon a time, more.', chunks: 3, stallAfterFirstChunk: true };
  if (user === 'use the tool' && !afterTool) return { toolCalls: [{ id: 'w1', name: 'wait_for_go', arguments: '{}' }, { id: 't1', name: 'get_time', arguments: '{}' }] };
  if (user === 'write a poem') return { hold: never };
  if (user === 'make it a haiku') return { text: 'An old silent pond' };
  return { text: `saw: ${b.messages.filter((m) => m.role === 'user').map((m) => m.content).join(' | ')}` };
}

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url));
  await createTestAgent(rt, model.baseURL, { toolsets: ['clock', 'test'] });
  worker = await startTestWorker(rt, { loop: { tools: builtinRegistry().register(gate) } });
  app = buildGatewayApp({ ...rt, tuning: { pollMs: 50 } });
  await app.ready();
  sub = rt.redis.duplicate();
  sub.on('pmessage', (_p: string, ch: string, raw: string) => { if (raw.includes('"delta"')) deltas.add(ch); });
  await sub.psubscribe(`${rt.config.HERMES_QUEUE_PREFIX}:admission:*`);
});
afterAll(async () => {
  releaseTool?.();
  await sub?.quit();
  await app?.close();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

async function post(content: string, conversation: string): Promise<{ admissionId: string; sessionId: string }> {
  const res = await app.inject({ method: 'POST', url: '/v1/agents/default/demo/messages', headers: { authorization: `Bearer ${testApiKey}` }, payload: { content, conversation } });
  expect(res.statusCode).toBe(202);
  return res.json();
}
async function finished(admissionId: string) {
  const a = await eventually(async () => {
    const row = await getAdmission(rt.db.pool, admissionId);
    return row?.state === 'terminal' ? row : undefined;
  }, `admission ${admissionId} terminal`);
  const reply = await eventually(async () => (await getObligationForAdmission(rt.db.pool, admissionId))?.content, 'obligation');
  return { a, reply };
}
const deltas = new Set<string>();
const firstDelta = (admissionId: string) =>
  eventually(async () => (deltas.has(admissionChannel(rt.config.HERMES_QUEUE_PREFIX, admissionId)) ? true : undefined), 'first streamed delta');

describe('turn control', () => {
  it('/stop aborts the in-flight model request and keeps the partial text, marked interrupted', async () => {
    const before = model.requests.length;
    const story = await post('tell a long story', 'c1');
    await eventually(async () => (model.requests.length > before ? true : undefined), 'model request');
    await firstDelta(story.admissionId);
    const stop = await post('/stop', 'c1');
    // Answered out of band, at admission: before the stopped turn has even ended.
    expect(await getAdmission(rt.db.pool, stop.admissionId)).toMatchObject({ state: 'terminal', outcome: 'completed' });
    const { a, reply } = await finished(story.admissionId);
    expect(a.outcome).toBe('interrupted');
    expect(reply).toBe('Once upo\n\n[interrupted: stopped by /stop]');
    await eventually(async () => (model.requests[before]!.aborted ? true : undefined), 'the model server saw the connection close');
    const transcript = await listTranscript(rt.db.pool, story.sessionId);
    // The transcript keeps what the model said, marked interrupted; the notice is the runtime's, sent but not stored as the model's words.
    expect(transcript.find((m) => m.admissionId === story.admissionId && m.role === 'assistant')).toMatchObject({ interrupted: true, content: 'Once upo' });
    expect((await finished(stop.admissionId)).reply).toBe('Stopping the running turn.');
  });

  it('/stop during tool execution cancels the running tool and the ones not started, with explicit results', async () => {
    armTool();
    const turn = await post('use the tool', 'c2');
    await toolRunning;
    await post('/stop', 'c2');
    const { a } = await finished(turn.admissionId);
    expect(a.outcome).toBe('interrupted');
    const results = (await listTranscript(rt.db.pool, turn.sessionId)).filter((m) => m.role === 'tool');
    expect(results.map((m) => [m.toolCallId, m.effectDisposition])).toEqual([['w1', 'unknown'], ['t1', 'none']]);
    expect(results[0]!.content).toMatch(/^cancelled: wait_for_go was running when the turn was stopped/);
    expect(results[1]!.content).toBe('cancelled: get_time was not started (the turn was stopped).');
  });

  it('steer reaches the model as a user line after the current tool batch', async () => {
    armTool();
    const turn = await post('use the tool', 'c3');
    await toolRunning;
    const steer = await post('/steer also mention cats', 'c3');
    await eventually(async () => {
      const { rows } = await rt.db.pool.query(`SELECT 1 FROM session_signals WHERE admission_id = $1 AND consumed_by = $2`, [steer.admissionId, turn.admissionId]);
      return rows.length ? true : undefined;
    }, 'steer consumed by the running turn');
    releaseTool();
    const { a, reply } = await finished(turn.admissionId);
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('saw: use the tool | also mention cats');
    expect((await finished(steer.admissionId)).reply).toBe('Sent to the running turn.');
  });

  it('redirect cancels the in-flight model call and continues the turn with the correction', async () => {
    const before = model.requests.length;
    const turn = await post('write a poem', 'c4');
    await eventually(async () => (model.requests.length > before ? true : undefined), 'model request');
    await post('/redirect make it a haiku', 'c4');
    const { a, reply } = await finished(turn.admissionId);
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('An old silent pond');
    // The fake learns of the abort when its socket closes, a moment after the worker let go.
    await eventually(() => model.requests[before]!.aborted || undefined, 'the redirected request aborted');
    expect(model.requests.at(-1)!.body.messages.slice(-2).map((m) => [m.role, m.content])).toEqual([['user', 'write a poem'], ['user', 'make it a haiku']]);
  });

  it('/stop with nothing running says so, and the next turn does not see it', async () => {
    const stop = await post('/stop', 'c5');
    expect((await finished(stop.admissionId)).reply).toBe('Nothing was running to stop.');
    const next = await post('hello', 'c5');
    expect((await finished(next.admissionId)).reply).toBe('saw: hello');
  });
});
