// SIGTERM on a worker process: it starts no further turn at once (the session's queue is handed
// to another worker), lets a running turn finish within the grace period and exits 0; past the
// grace period the turn is cut (recorded, never left hanging), the session is resume_pending and
// another worker resumes it once, continuing the transcript. A second SIGTERM exits at once (143).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission, getObligationForAdmission } from '../../../services/core/index.js';
import { RESUME_NOTE } from '../../../services/worker/turn-context.js';
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
let releaseFirst!: () => void;
const firstReleased = new Promise<void>((r) => { releaseFirst = r; });

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((b) => {
    const text = lastUser(b);
    if (text === 'slow') return { hold: released, text: 'finished after SIGTERM' };
    if (text === 'stuck' || text === 'held twice') return { hold: never };
    if (text === 'first of three') return { hold: firstReleased, text: 'first done' };
    if (text === RESUME_NOTE) return { text: 'resumed answer' };
    return { text: `echo: ${text}` };
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

const admitIn = (session: string, content: string) =>
  admit(rt.db, { agentId, platform: 'api', sessionKey: `agent:default/demo:api:dm:${session}`, user: { platformUserId: session }, content, replyTarget: { kind: 'api' } });

async function runUntilInFlight(content: string, graceSeconds: number) {
  const adm = await admitIn(content, content);
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

  it('a second SIGTERM exits at once with 143, by its own handler (not killed by the signal)', async () => {
    const { worker } = await runUntilInFlight('held twice', 60);
    const exit = new Promise<[number | null, NodeJS.Signals | null]>((r) => worker.once('exit', (code, signal) => r([code, signal])));
    worker.kill('SIGTERM');
    // The first signal is being handled (the turn holds the shutdown) before the second is sent.
    await new Promise((r) => setTimeout(r, 1_000));
    worker.kill('SIGTERM');
    // With process.once the second SIGTERM met Node's default action: killed by the signal, code null.
    expect(await exit).toEqual([143, null]);
  });

  it('past the grace period, cuts the turn and exits 0; another worker resumes the session once', async () => {
    const { adm, worker } = await runUntilInFlight('stuck', 1);
    worker.kill('SIGTERM');
    expect(await exitOf(worker)).toBe(0);
    const a = await getAdmission(rt.db.pool, adm.admissionId);
    expect(a).toMatchObject({ state: 'terminal', outcome: 'interrupted', error: 'cut by a worker shutdown' });
    await eventually(() => model.requests.find((r) => lastUser(r.body) === 'stuck')?.aborted || undefined, 'the cut model call aborted'); // seen when its socket closes
    expect(await getObligationForAdmission(rt.db.pool, adm.admissionId)).toBeUndefined(); // the resume answers instead
    const { rows: [session] } = await rt.db.pool.query(`SELECT state, shutdown_cuts FROM sessions WHERE id = $1`, [adm.sessionId]);
    expect(session).toEqual({ state: 'resume_pending', shutdown_cuts: 1 });
    const { rows: resumes } = await rt.db.pool.query(`SELECT id, state, intent, reply_target FROM admissions WHERE resume_of = $1`, [adm.admissionId]);
    expect(resumes).toEqual([{ id: expect.any(String), state: 'queued', intent: 'resume', reply_target: { kind: 'api' } }]);

    const next = spawnWorker(30);
    const resumed = await eventually(async () => {
      const r = await getAdmission(rt.db.pool, resumes[0].id);
      return r?.state === 'terminal' ? r : undefined;
    }, 'the resume turn to finish', 60_000);
    expect(resumed.outcome).toBe('completed');
    expect((await getObligationForAdmission(rt.db.pool, resumed.id))?.content).toBe('resumed answer');
    // The resumed request continued the transcript: the user's line, then the note (request-only, not stored).
    const request = model.requests.find((r) => lastUser(r.body) === RESUME_NOTE)!;
    const users = request.body.messages.filter((m) => m.role === 'user').map((m) => m.content);
    expect(users.slice(-2)).toEqual(['stuck', RESUME_NOTE]);
    const { rows: [after] } = await rt.db.pool.query(`SELECT state, shutdown_cuts FROM sessions WHERE id = $1`, [adm.sessionId]);
    expect(after).toEqual({ state: 'active', shutdown_cuts: 0 });
    const { rows: stored } = await rt.db.pool.query(`SELECT count(*)::int AS n FROM messages WHERE session_id = $1 AND content = $2`, [adm.sessionId, RESUME_NOTE]);
    expect(stored[0].n).toBe(0);
    next.kill('SIGTERM');
    expect(await exitOf(next)).toBe(0);
  }, 120_000);

  it('starts no further turn of the session after SIGTERM: the rest waits for (and runs on) another worker, in order', async () => {
    const first = await admitIn('three', 'first of three');
    const second = await admitIn('three', 'second of three');
    const third = await admitIn('three', 'third of three');
    const worker = spawnWorker(60);
    await enqueueTurn(rt.queues, { admissionId: first.admissionId });
    await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'first of three'), 'the first model call in flight', 60_000);
    worker.kill('SIGTERM');
    const exited = exitOf(worker);
    // The worker has taken the signal in once it pre-marks the running session resume_pending.
    await eventually(async () => (await rt.db.pool.query(`SELECT state FROM sessions WHERE id = $1`, [first.sessionId])).rows[0]?.state === 'resume_pending', 'the drain to begin');
    releaseFirst();
    expect(await exited).toBe(0);
    expect(await getAdmission(rt.db.pool, first.admissionId)).toMatchObject({ state: 'terminal', outcome: 'completed' });
    // The draining worker claimed neither of the others.
    expect((await getAdmission(rt.db.pool, second.admissionId))?.state).toBe('queued');
    expect((await getAdmission(rt.db.pool, third.admissionId))?.state).toBe('queued');
    const next = spawnWorker(30);
    const done = await eventually(async () => {
      const rows = await Promise.all([second, third].map((x) => getAdmission(rt.db.pool, x.admissionId)));
      return rows.every((r) => r?.state === 'terminal') ? rows : undefined;
    }, 'the other two to run on the next worker', 60_000);
    expect(done.map((r) => r!.outcome)).toEqual(['completed', 'completed']);
    expect(done[0]!.startedAt!.getTime()).toBeLessThanOrEqual(done[1]!.startedAt!.getTime());
    next.kill('SIGTERM');
    expect(await exitOf(next)).toBe(0);
  }, 120_000);
});
