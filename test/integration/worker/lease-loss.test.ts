// SPEC: a worker whose session turn lease is lost (its holding expired and another worker took
// the session) hard-cancels the turn — the in-flight model request is aborted — and writes
// nothing more for it: the lease fences its transcript and terminal writes. Recovery settles the
// admission `unknown` with a notice; the model is never asked for that input again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLease, admit, registerInstance, enqueueTurn, getAdmission, getObligationForAdmission, listTranscript, sweepOnce, unknownNotice } from '../../../services/core/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let agentId: string;
let answer!: () => void;
const held = new Promise<void>((r) => { answer = r; });

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((b) => (lastUser(b) === 'think slowly' ? { hold: held, text: 'too late' } : { text: `echo: ${lastUser(b)}` }));
  rt = await openTestRuntime(testConfig(database.url));
  agentId = await createTestAgent(rt, model.baseURL);
  worker = await startTestWorker(rt);
});
afterAll(async () => {
  answer();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

describe('session turn lease lost mid-turn', () => {
  it('aborts the model request, writes nothing more for the turn, and recovery settles it unknown', async () => {
    const key = 'agent:default/demo:api:dm:lease';
    const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'u1' }, content: 'think slowly', replyTarget: { kind: 'api' } });
    await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
    const request = await eventually(async () => model.requests.find((r) => lastUser(r.body) === 'think slowly'), 'the model request');
    const started = (await getAdmission(rt.db.pool, adm.admissionId))!;
    expect(started.state).toBe('started');

    // The holding expires (as after a long database stall) and another worker takes the session.
    await rt.db.pool.query(`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, [started.sessionId]);
    const thief = await acquireLease(rt.db.pool, started.sessionId, (await registerInstance(rt.db.pool, 'worker')).id, 60, { instanceTtlSeconds: 3, steady: true });
    expect(thief).toBeDefined();

    // The next renewal fails and the turn is hard-cancelled: the connection to the model closes.
    await eventually(async () => (request.aborted ? true : undefined), 'the model request to be aborted');
    answer(); // the model would have answered now; nobody is listening any more
    // The old holder wrote no assistant message and no terminal state.
    // The new holder does not run it either; recovery (the worker's sweeper, or this one) settles it unknown with the notice.
    await rt.db.pool.query(`UPDATE session_leases SET owner_instance_id = NULL, expires_at = NULL WHERE session_id = $1`, [started.sessionId]);
    const settled = await eventually(async () => {
      await sweepOnce(rt.db, rt.queues, rt.config);
      const a = await getAdmission(rt.db.pool, adm.admissionId);
      return a?.state === 'unknown' ? a : undefined;
    }, 'admission unknown');
    expect(settled.outcome).toBeNull();
    expect(settled.error).toBe('owner stopped mid-turn');
    // The old holder's writes were fenced: no assistant message, not even the interrupted partial.
    expect((await listTranscript(rt.db.pool, started.sessionId)).map((m) => m.role)).toEqual(['user']);
    expect((await getObligationForAdmission(rt.db.pool, adm.admissionId))?.content).toBe(unknownNotice);
    expect(model.requests.filter((r) => lastUser(r.body) === 'think slowly')).toHaveLength(1);

    // The session goes on.
    const next = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'u1' }, content: 'still there?', replyTarget: { kind: 'api' } });
    await enqueueTurn(rt.queues, { admissionId: next.admissionId });
    await eventually(async () => ((await getAdmission(rt.db.pool, next.admissionId))?.state === 'terminal' ? true : undefined), 'the next turn');
    expect((await getObligationForAdmission(rt.db.pool, next.admissionId))?.content).toBe('echo: still there?');
  });
});
