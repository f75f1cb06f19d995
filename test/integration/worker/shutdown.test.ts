// SIGTERM on a worker process: it stops taking jobs, lets a running turn finish within the
// grace period and exits 0; past the grace period the turn ends `interrupted` (recorded, never
// left hanging) and the process still exits cleanly.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission } from '../../../services/core/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, type TestRuntime } from '../../support/system.js';

const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));
let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let agentId: string;
const children: ChildProcess[] = [];
let release!: () => void;
const released = new Promise<void>((r) => { release = r; });
const never = new Promise<void>(() => undefined);

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((b) => {
    const text = lastUser(b);
    if (text === 'slow') return { hold: released, text: 'finished after SIGTERM' };
    if (text === 'stuck') return { hold: never };
    return { text: 'ok' };
  });
  rt = await openTestRuntime(testConfig(database.url));
  agentId = await createTestAgent(rt, model.baseURL);
});

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await rt?.close();
  await model?.close();
  await database?.drop();
});

function spawnWorker(graceSeconds: number): ChildProcess {
  const c = rt.config;
  const p = spawn(process.execPath, [bin, 'worker'], {
    env: {
      PATH: process.env.PATH, DATABASE_URL: c.DATABASE_URL, REDIS_URL: c.REDIS_URL, HERMES_QUEUE_PREFIX: c.HERMES_QUEUE_PREFIX,
      HERMES_SHUTDOWN_GRACE_SECONDS: String(graceSeconds), HERMES_LOG_LEVEL: 'warn', OPENAI_API_KEY: 'sk-test', HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY', HERMES_WORKER_PORT: '0',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(p);
  return p;
}

const exitOf = (p: ChildProcess) => new Promise<number | null>((r) => (p.exitCode !== null ? r(p.exitCode) : p.once('exit', (code) => r(code))));

async function runUntilInFlight(content: string, graceSeconds: number) {
  const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: `agent:default/demo:api:dm:${content}`, user: { platformUserId: content }, content });
  const worker = spawnWorker(graceSeconds);
  await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
  await eventually(() => model.inFlight().find((r) => lastUser(r.body) === content), `the ${content} model call in flight`, 60_000);
  return { adm, worker };
}

describe('worker SIGTERM', () => {
  it('lets the running turn finish within the grace period, then exits 0', async () => {
    const { adm, worker } = await runUntilInFlight('slow', 60);
    worker.kill('SIGTERM');
    const exited = exitOf(worker);
    // Still running the turn: the process must not have gone before the model answers.
    expect((await getAdmission(rt.db.pool, adm.admissionId))?.state).toBe('started');
    release();
    expect(await exited).toBe(0);
    const a = await getAdmission(rt.db.pool, adm.admissionId);
    expect(a).toMatchObject({ state: 'terminal', outcome: 'completed' });
  });

  it('past the grace period, ends the turn interrupted and exits 0', async () => {
    const { adm, worker } = await runUntilInFlight('stuck', 1);
    worker.kill('SIGTERM');
    expect(await exitOf(worker)).toBe(0);
    const a = await getAdmission(rt.db.pool, adm.admissionId);
    expect(a).toMatchObject({ state: 'terminal', outcome: 'interrupted' });
    expect(a?.error).toMatch(/shutting down/);
    expect(model.requests.find((r) => lastUser(r.body) === 'stuck')?.aborted).toBe(true);
  });
});
