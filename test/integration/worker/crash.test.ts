// A worker process SIGKILLed mid-turn: once it is known dead (heartbeat older than the instance
// TTL, judged by a steady worker) its lease is freed at once — not after the lease TTL (600 s
// here) — its admission ends `unknown`, the model is never asked for that input again, and the
// session's next message is served.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission, unknownNotice } from '../../../services/core/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, deliveredObligation, openTestRuntime, spawnTestWorker, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let child: ChildProcess | undefined;
let survivor: RunningWorker | undefined;
let agentId: string;
const never = new Promise<void>(() => undefined);

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((b) => (lastUser(b) === 'stall forever' ? { hold: never } : { text: `echo: ${lastUser(b)}` }));
  rt = await openTestRuntime(testConfig(database.url));
  agentId = await createTestAgent(rt, model.baseURL);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await survivor?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

describe('worker killed mid-turn', () => {
  it('leaves the admission unknown, never re-runs it, and the session goes on', async () => {
    const key = 'agent:default/demo:api:dm:crash';
    const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'crash' }, content: 'stall forever' });
    child = spawnTestWorker(rt.config);
    await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
    const seen = await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'stall forever'), 'the model call in flight', 60_000);
    expect((await getAdmission(rt.db.pool, adm.admissionId))?.state).toBe('started');

    child.kill('SIGKILL');
    await eventually(() => seen.aborted, 'the dead worker connection to close');
    // The user writes again at once; a live worker takes the job but the dead one's lease (600 s) still stands.
    survivor = await startTestWorker(rt);
    const next = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'crash' }, content: 'are you there?' });
    await enqueueTurn(rt.queues, { admissionId: next.admissionId });

    // The survivor's sweeper frees the dead owner's lease, settles the turn unknown, then serves the next message.
    const settled = await eventually(async () => {
      const a = await getAdmission(rt.db.pool, adm.admissionId);
      return a?.state === 'unknown' ? a : undefined;
    }, 'admission unknown', 30_000, 250);
    expect(settled.outcome).toBeNull();
    await eventually(async () => (await getAdmission(rt.db.pool, next.admissionId))?.state === 'terminal', 'next turn terminal (long before the 600 s lease would expire)', 30_000);
    const notice = await deliveredObligation(rt.db.pool, adm.admissionId, 'unknown notice delivered');
    expect(notice.content).toBe(unknownNotice);

    expect(model.requests.filter((r) => lastUser(r.body) === 'stall forever')).toHaveLength(1);
    expect((await getAdmission(rt.db.pool, adm.admissionId))?.state).toBe('unknown');
  });
});
