// One turn per session at a time across workers: two worker instances race for the same
// session's admissions; the model must never see two requests of one session at once, and a
// session's turns run in admission order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn } from '../../../services/core/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rtA: TestRuntime;
let rtB: TestRuntime;
const workers: RunningWorker[] = [];
let agentId: string;

const inFlight = new Map<string, number>();
const maxInFlight = new Map<string, number>();
const order = new Map<string, number[]>();

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(async (b) => {
    const [session, n] = lastUser(b).split('#') as [string, string];
    const now = (inFlight.get(session) ?? 0) + 1;
    inFlight.set(session, now);
    maxInFlight.set(session, Math.max(maxInFlight.get(session) ?? 0, now));
    order.set(session, [...(order.get(session) ?? []), Number(n)]);
    // Hold the request open a little so overlapping turns, if any, would be caught in flight.
    await new Promise((r) => setTimeout(r, 15));
    inFlight.set(session, (inFlight.get(session) ?? 1) - 1);
    return { text: `done ${session}#${n}` };
  });
  const config = testConfig(database.url, { HERMES_TURN_CONCURRENCY: 8 });
  rtA = await openTestRuntime(config, 'worker-a');
  rtB = await openTestRuntime(config, 'worker-b');
  agentId = await createTestAgent(rtA, model.baseURL);
  workers.push(await startTestWorker(rtA), await startTestWorker(rtB));
});

afterAll(async () => {
  for (const w of workers) await w.close();
  await rtA?.close();
  await rtB?.close();
  await model?.close();
  await database?.drop();
});

describe('session leases', () => {
  it('never runs two turns of one session at once, and runs them in order', async () => {
    const sessions = ['alpha', 'beta', 'gamma'];
    const perSession = 8;
    const ids: string[] = [];
    for (let i = 0; i < perSession; i++) {
      for (const s of sessions) {
        const a = await admit(rtA.db, { agentId, platform: 'api', sessionKey: `agent:default/demo:api:dm:${s}`, user: { platformUserId: s }, content: `${s}#${i}` });
        ids.push(a.admissionId);
      }
    }
    // Every job is offered to both workers' consumers at once.
    await Promise.all(ids.map((admissionId) => enqueueTurn(rtA.queues, { admissionId })));
    await eventually(async () => {
      const { rows } = await rtA.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM admissions WHERE state = 'terminal'`);
      return rows[0]!.n === ids.length;
    }, 'all turns terminal', 60_000);

    for (const s of sessions) {
      expect(maxInFlight.get(s)).toBe(1);
      expect(order.get(s)).toEqual([...Array(perSession).keys()]);
    }
    const { rows } = await rtA.db.pool.query<{ outcome: string; n: number }>(`SELECT outcome, count(*)::int AS n FROM admissions GROUP BY outcome`);
    expect(rows).toEqual([{ outcome: 'completed', n: ids.length }]);
  });
});
