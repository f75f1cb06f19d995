// A worker process SIGKILLed mid-turn: its admission must end `unknown` once its heartbeat
// expires, the model must never be asked for that input again, and the session stays usable.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission, getObligationForAdmission, sweepOnce, unknownNotice } from '../../../services/core/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';

const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));
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

function spawnWorker(): ChildProcess {
  const c = rt.config;
  const env = {
    PATH: process.env.PATH, DATABASE_URL: c.DATABASE_URL, REDIS_URL: c.REDIS_URL, HERMES_QUEUE_PREFIX: c.HERMES_QUEUE_PREFIX,
    HERMES_HEARTBEAT_SECONDS: '1', HERMES_INSTANCE_TTL_SECONDS: '3', HERMES_LEASE_TTL_SECONDS: '5', HERMES_LEASE_RENEW_SECONDS: '1',
    HERMES_LOG_LEVEL: 'warn', OPENAI_API_KEY: 'sk-test', HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY', HERMES_WORKER_PORT: '0',
  };
  const p = spawn(process.execPath, [bin, 'worker'], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  return p;
}

describe('worker killed mid-turn', () => {
  it('leaves the admission unknown, never re-runs it, and the session goes on', async () => {
    const key = 'agent:default/demo:api:dm:crash';
    const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'crash' }, content: 'stall forever' });
    child = spawnWorker();
    await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
    const seen = await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'stall forever'), 'the model call in flight', 60_000);
    expect((await getAdmission(rt.db.pool, adm.admissionId))?.state).toBe('started');

    child.kill('SIGKILL');
    await eventually(() => seen.aborted, 'the dead worker connection to close');

    // Recovery (any sweeper) settles it as unknown once the heartbeat is older than the TTL.
    const settled = await eventually(async () => {
      await sweepOnce(rt.db, rt.queues, rt.config);
      const a = await getAdmission(rt.db.pool, adm.admissionId);
      return a?.state === 'unknown' ? a : undefined;
    }, 'admission unknown', 30_000, 250);
    expect(settled.outcome).toBeNull();

    // A live worker delivers the notice and serves the next message of the same session.
    survivor = await startTestWorker(rt);
    const next = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'crash' }, content: 'are you there?' });
    await enqueueTurn(rt.queues, { admissionId: next.admissionId });
    await eventually(async () => (await getAdmission(rt.db.pool, next.admissionId))?.state === 'terminal', 'next turn terminal', 30_000);
    const notice = await eventually(async () => {
      const o = await getObligationForAdmission(rt.db.pool, adm.admissionId);
      return o?.state === 'delivered' ? o : undefined;
    }, 'unknown notice delivered');
    expect(notice.content).toBe(unknownNotice);

    expect(model.requests.filter((r) => lastUser(r.body) === 'stall forever')).toHaveLength(1);
    expect((await getAdmission(rt.db.pool, adm.admissionId))?.state).toBe('unknown');
  });
});
