// `hermes worker` as its Deployment runs it: /healthz, /readyz and /metrics on HERMES_WORKER_PORT.
// The per-agent, per-model counters of the turns it ran are scraped from the worker itself;
// on SIGTERM /readyz turns 503 "shutting down" while the running turn finishes.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission } from '../../../services/core/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, type TestRuntime } from '../../support/system.js';
import { freePort } from '../../support/ports.js';

const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));
let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: ChildProcess | undefined;
let agentId: string;
let release!: () => void;
const held = new Promise<void>((r) => { release = r; });

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((b) => (lastUser(b) === 'slow one' ? { hold: held, text: 'done slowly' } : { text: `echo: ${lastUser(b)}`, usage: { prompt_tokens: 120, completion_tokens: 7 } }));
  rt = await openTestRuntime(testConfig(database.url));
  agentId = await createTestAgent(rt, model.baseURL);
});
afterAll(async () => {
  release();
  worker?.kill('SIGKILL');
  await rt?.close();
  await model?.close();
  await database?.drop();
});

const get = async (url: string) => {
  const res = await request(url);
  return { status: res.statusCode, type: String(res.headers['content-type']), body: await res.body.text() };
};

async function turn(content: string) {
  const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: `agent:default/demo:api:dm:${content}`, user: { platformUserId: 'u1' }, content, replyTarget: { kind: 'api' } });
  await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
  return adm.admissionId;
}

describe('worker probes and metrics', () => {
  it('answers /healthz and /readyz, exposes the turn counters on /metrics, and reports draining on SIGTERM', async () => {
    const port = await freePort();
    const c = rt.config;
    worker = spawn(process.execPath, [bin, 'worker'], {
      env: {
        PATH: process.env.PATH, DATABASE_URL: c.DATABASE_URL, REDIS_URL: c.REDIS_URL, HERMES_QUEUE_PREFIX: c.HERMES_QUEUE_PREFIX,
        HERMES_HOST: '127.0.0.1', HERMES_WORKER_PORT: String(port), HERMES_LOG_LEVEL: 'warn', OPENAI_API_KEY: 'sk-test', HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY', HERMES_SHUTDOWN_GRACE_SECONDS: '60',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const base = `http://127.0.0.1:${port}`;
    await eventually(async () => ((await get(`${base}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined), 'the worker probes', 60_000);
    const ready = await get(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({ status: 'ready', checks: { postgres: { ok: true }, redis: { ok: true } } });

    const done = await turn('hello');
    await eventually(async () => ((await getAdmission(rt.db.pool, done))?.state === 'terminal' ? true : undefined), 'the turn');
    // The counters are bumped right after the terminal commit: scrape until they show.
    const metrics = await eventually(async () => {
      const m = await get(`${base}/metrics`);
      return m.body.includes('hermes_turns_total{') ? m : undefined;
    }, 'the turn in /metrics');
    expect(metrics.type).toContain('text/plain');
    expect(metrics.body).toMatch(/^process_cpu_seconds_total\{component="worker"\} /m);
    expect(metrics.body).toMatch(/hermes_turns_total\{agent="default\/demo",outcome="completed",component="worker"\} 1/);
    expect(metrics.body).toMatch(/hermes_model_calls_total\{agent="default\/demo",model="gpt-test",outcome="completed",component="worker"\} 1/);
    expect(metrics.body).toMatch(/hermes_model_tokens_total\{agent="default\/demo",model="gpt-test",kind="input",component="worker"\} 120/);
    expect(metrics.body).toMatch(/hermes_model_tokens_total\{agent="default\/demo",model="gpt-test",kind="output",component="worker"\} 7/);

    // SIGTERM while a turn runs: not ready any more (and says why), still alive, then exit 0.
    const slow = await turn('slow one');
    await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'slow one'), 'the slow call in flight');
    const exited = new Promise<number | null>((r) => worker!.once('exit', (code) => r(code)));
    worker.kill('SIGTERM');
    const draining = await eventually(async () => {
      const r = await get(`${base}/readyz`);
      return r.status === 503 ? r : undefined;
    }, '/readyz to report draining');
    expect(JSON.parse(draining.body)).toMatchObject({ status: 'unready', error: { code: 'HERMES_NOT_READY', message: 'Not ready: worker (shutting down) failed.' } });
    expect((await get(`${base}/healthz`)).status).toBe(200);
    release();
    expect(await exited).toBe(0);
    expect((await getAdmission(rt.db.pool, slow))?.outcome).toBe('completed');
  });
});
