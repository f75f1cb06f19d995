// The liveness watchdog inside the real worker: a turn stuck in a model request that never
// answers, or in a tool that never returns and ignores its signal, ends `interrupted` with the
// reason. Time and the poll ticker are injected; the stall window comes from Config.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { admit, enqueueTurn, getAdmission, getObligationForAdmission, listTranscript } from '../../../services/core/index.js';
import { builtinRegistry, defineTool, type Ticker } from '../../../services/agent/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { recordingClock } from './helpers.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;

// Injected watchdog time: nothing stalls until the test moves `now` and fires the poll.
let now = 0;
const polls = new Set<() => void>();
const pollMs: number[] = [];
const ticker: Ticker = (ms, fn) => { pollMs.push(ms); polls.add(fn); return () => polls.delete(fn); };
const elapse = (ms: number) => { now += ms; for (const p of [...polls]) p(); };

let hangEntered = false;
const hang = defineTool({
  name: 'hang', description: 'Never returns and ignores cancellation.', toolset: 'test', sideEffect: 'writes',
  schema: z.object({}).strict(),
  handler: () => { hangEntered = true; return new Promise<string>(() => undefined); },
});

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((b) => {
    if (lastUser(b) === 'stuck model') return { hold: new Promise<void>(() => undefined) };
    if (lastUser(b) === 'stuck tool' && b.messages.at(-1)!.role === 'user') return { toolCalls: [{ id: 'h1', name: 'hang', arguments: '{}' }] };
    return { text: 'done' };
  });
  rt = await openTestRuntime(testConfig(database.url, { HERMES_TURN_STALL_SECONDS: 2, HERMES_TURN_WATCHDOG_POLL_SECONDS: 0.5 }));
  worker = await startTestWorker(rt, { loop: { clock: recordingClock(), tools: builtinRegistry().register(hang), watchdog: { now: () => now, ticker } } });
});
afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

async function start(agentName: string, content: string) {
  const agentId = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: agentName }, toolsets: ['test'] });
  const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: `agent:default/${agentName}:api:dm:u1`, user: { platformUserId: 'u1' }, content, replyTarget: { kind: 'api' } });
  await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
  return adm;
}

async function terminal(admissionId: string) {
  return eventually(async () => {
    const row = await getAdmission(rt.db.pool, admissionId);
    return row?.state === 'terminal' ? row : undefined;
  }, `admission ${admissionId} terminal`);
}

describe('liveness watchdog', () => {
  it('ends a turn whose model request never answers; the request is aborted', async () => {
    const adm = await start('stuckmodel', 'stuck model');
    const req = await eventually(async () => model.requests.find((r) => lastUser(r.body) === 'stuck model'), 'model request in flight');
    expect(pollMs.at(-1)).toBe(500);
    elapse(1_999);
    expect((await getAdmission(rt.db.pool, adm.admissionId))?.state).not.toBe('terminal');
    elapse(1);
    const a = await terminal(adm.admissionId);
    expect(a.outcome).toBe('interrupted');
    const reply = (await getObligationForAdmission(rt.db.pool, adm.admissionId))!.content;
    expect(reply).toContain('no progress for 2 s');
    await eventually(async () => req.aborted || undefined, 'the fake server saw the connection close');
  });

  it('ends a turn stuck in a tool that ignores its signal; the call is recorded as cancelled', async () => {
    const adm = await start('stucktool', 'stuck tool');
    await eventually(async () => hangEntered || undefined, 'tool running');
    elapse(2_000);
    const a = await terminal(adm.admissionId);
    expect(a.outcome).toBe('interrupted');
    const reply = (await getObligationForAdmission(rt.db.pool, adm.admissionId))!.content;
    expect(reply).toContain('no progress for 2 s');
    const transcript = await listTranscript(rt.db.pool, adm.sessionId);
    const result = transcript.find((m) => m.role === 'tool');
    expect(result?.content).toMatch(/^cancelled: hang was running/);
    expect(result?.effectDisposition).toBe('unknown');
  });
});
