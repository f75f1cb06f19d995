// The Kanban dispatcher on a real Postgres with an injected clock: dependency promotion, the
// claim TTL, stale heartbeats, max runtime, crashed workers by instance id, the circuit breaker
// (infrastructure failures not counted), triage after repeated blocks, and two dispatchers racing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminScope, blockTask, completeTask, createTask, dispatchTick, finishTurn, heartbeatTask, markStopped, namedBoard, openDb, registerInstance, showTask,
  runKanbanDispatcher, startTurn, turnScope, unblockTask, type Db, type DispatchPolicy, type KanbanScope, type TickDeps,
} from '../../../services/core/index.js';
import { pgKanbanAccess } from '../../../services/agent/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let rt: TestRuntime;
let scope: KanbanScope;
let now = new Date('2026-03-01T00:00:00Z');
const policy: DispatchPolicy = { failureLimit: 2, claimTtlSeconds: 900, staleSeconds: 1800, maxRuntimeSeconds: 14_400, claimsPerTick: 500 };
const deps = (db: Db = rt.db): TickDeps => ({ db, queuePrefix: rt.config.HERMES_QUEUE_PREFIX, policy, log: rt.log, rule: { instanceTtlSeconds: 3, steady: true } });
const tick = (db?: Db) => dispatchTick(deps(db), now);
const advance = (s: number) => { now = new Date(now.getTime() + s * 1_000); };

beforeAll(async () => {
  database = await createTestDatabase();
  rt = await openTestRuntime(testConfig(database.url));
  await createTestAgent(rt, 'http://127.0.0.1:9');
  scope = adminScope(await namedBoard(rt.db.pool, { namespace: 'default', agent: 'demo', board: 'ops' }, true), 'test');
});
afterAll(async () => {
  await rt?.close();
  await database?.drop();
});

const create = (title: string, extra: Parameters<typeof createTask>[2] extends infer C ? Partial<C> : never = {}) =>
  rt.db.tx(async (sql) => (await createTask(sql, scope, { title, assignee: 'demo', ...extra }, now)).task);
const detail = (id: string) => showTask(rt.db.pool, scope, id);
const currentRun = async (id: string) => (await detail(id)).runs.at(-1)!;

/** Plays the worker: takes the run's session lease and starts its turn, as a worker does. */
async function startRun(taskId: string, owner?: string) {
  const run = await currentRun(taskId);
  const { rows } = await rt.db.pool.query<{ session_id: string }>(`SELECT session_id FROM admissions WHERE id = $1`, [run.admissionId]);
  const instance = owner ?? (await registerInstance(rt.db.pool, 'worker')).id;
  const started = await startTurn(rt.db, rows[0]!.session_id, instance, 600, { instanceTtlSeconds: 3, steady: true });
  expect(started?.admission.id).toBe(run.admissionId);
  return { run, instance, started: started!, worker: (await turnScope(rt.db.pool, started!.admission))! };
}

describe('Kanban dispatcher', () => {
  it('promotes a child only when its parents are done, then claims it into a queued admission of its assignee', async () => {
    const a = await create('research');
    const b = await create('write up', { parents: [a.id] });
    const first = await tick();
    expect(first.claimed).toContain(a.id);
    expect(first.claimed).not.toContain(b.id);
    expect((await detail(b.id)).task.status).toBe('todo');

    const { worker, run } = await startRun(a.id);
    expect(worker).toMatchObject({ mode: 'worker', taskId: a.id, runId: run.id });
    const adm = await rt.db.pool.query<{ content: string; platform: string; state: string }>(`SELECT content, platform, state FROM admissions WHERE id = $1`, [run.admissionId]);
    expect(adm.rows[0]).toMatchObject({ platform: 'kanban', state: 'started' });
    expect(adm.rows[0]!.content).toContain(`Kanban task ${a.id}`);
    await rt.db.tx((sql) => completeTask(sql, worker, a.id, { summary: 'found three sources' }, now));

    const second = await tick();
    expect(second.claimed).toContain(b.id);
    const child = await rt.db.pool.query<{ content: string }>(`SELECT content FROM admissions WHERE id = $1`, [(await currentRun(b.id)).admissionId]);
    expect(child.rows[0]!.content).toContain('found three sources'); // the parent's handoff is in the child's prompt
    expect((await detail(a.id)).runs[0]).toMatchObject({ status: 'ended', outcome: 'completed' });
  });

  it('reclaims a claim whose turn never started after the 15 min TTL, and blocks the task after two such failures (breaker)', async () => {
    const t = await create('never picked up');
    await tick();
    const first = await currentRun(t.id);
    advance(899);
    expect((await tick()).reclaimed).toBe(0);
    advance(2);
    const r = await tick();
    expect(r.reclaimed).toBeGreaterThanOrEqual(1);
    const after = await detail(t.id);
    expect(after.runs[0]).toMatchObject({ id: first.id, outcome: 'reclaimed' });
    expect(after.task).toMatchObject({ status: 'running', consecutiveFailures: 1 }); // re-claimed in the same tick
    const dropped = await rt.db.pool.query<{ state: string; outcome: string }>(`SELECT state, outcome FROM admissions WHERE id = $1`, [first.admissionId]);
    expect(dropped.rows[0]).toEqual({ state: 'terminal', outcome: 'discarded' });

    advance(901);
    await tick();
    const blocked = await detail(t.id);
    expect(blocked.task).toMatchObject({ status: 'blocked', blockKind: 'needs_input', consecutiveFailures: 2 });
    expect(blocked.events.map((e) => e.kind)).toContain('gave_up');
    expect(blocked.runs).toHaveLength(2);
  });

  it('settles a run whose worker instance is gone as crashed (by instance id), and counts it', async () => {
    const t = await create('crashy');
    await tick();
    const { instance, run } = await startRun(t.id);
    expect((await tick()).crashed).toBe(0);
    expect((await currentRun(t.id)).status).toBe('running');
    await markStopped(rt.db.pool, instance);
    const r = await tick();
    expect(r.crashed).toBeGreaterThanOrEqual(1);
    const d = await detail(t.id);
    expect(d.runs.find((x) => x.id === run.id)).toMatchObject({ outcome: 'crashed', error: `worker instance ${instance} is gone` });
    expect(d.task.consecutiveFailures).toBe(1);
  });

  it('stops a run without heartbeat for the stale timeout; a heartbeat keeps it alive', async () => {
    const t = await create('long crawl');
    await tick();
    const { worker, run, started } = await startRun(t.id);
    await tick(); // observes the start
    advance(1_500);
    await rt.db.tx((sql) => heartbeatTask(sql, worker, t.id, { note: 'halfway', claimTtlSeconds: policy.claimTtlSeconds }, now));
    advance(1_500);
    expect((await tick()).stale).toBe(0);
    advance(301);
    expect((await tick()).stale).toBe(1);
    expect((await detail(t.id)).runs.find((x) => x.id === run.id)).toMatchObject({ outcome: 'stale' });
    const sig = await rt.db.pool.query<{ kind: string }>(`SELECT kind FROM session_signals WHERE session_id = $1`, [started.lease.sessionId]);
    expect(sig.rows.map((s) => s.kind)).toContain('stop');
  });

  it('times out a run past its max runtime', async () => {
    const t = await create('bounded', { maxRuntimeSeconds: 60 });
    await tick();
    const { run } = await startRun(t.id);
    await tick();
    advance(59);
    expect((await tick()).timedOut).toBe(0);
    advance(2);
    expect((await tick()).timedOut).toBe(1);
    expect((await detail(t.id)).runs.find((x) => x.id === run.id)).toMatchObject({ outcome: 'timed_out' });
  });

  it('counts a turn that ended without kanban_complete, but not one failed by the provider (infrastructure)', async () => {
    const t = await create('forgetful');
    await tick();
    let s = await startRun(t.id);
    await finishTurn(rt.db, s.started.lease, s.run.admissionId!, { outcome: 'failed', reply: 'The model is unavailable.', error: 'provider answered 429: rate limited' });
    await tick();
    let d = await detail(t.id);
    expect(d.runs[0]).toMatchObject({ outcome: 'failed', infrastructure: true });
    expect(d.task.consecutiveFailures).toBe(0);
    s = await startRun(t.id);
    await finishTurn(rt.db, s.started.lease, s.run.admissionId!, { outcome: 'completed', reply: 'done, I think' });
    await tick();
    d = await detail(t.id);
    expect(d.runs[1]).toMatchObject({ outcome: 'protocol_violation', infrastructure: false });
    expect(d.task.consecutiveFailures).toBe(1);
  });

  it('routes a task blocked and unblocked twice to triage, for a person', async () => {
    const t = await create('flaky spec');
    for (let i = 0; i < 3; i++) {
      await tick();
      const { worker } = await startRun(t.id);
      const to = await rt.db.tx((sql) => blockTask(sql, worker, t.id, { reason: 'which API version?', kind: 'needs_input' }, now));
      expect(to).toBe(i < 2 ? 'blocked' : 'triage');
      if (i < 2) expect(await rt.db.tx((sql) => unblockTask(sql, scope, t.id, now))).toBe('ready');
    }
    const d = await detail(t.id);
    expect(d.task).toMatchObject({ status: 'triage', blockKind: 'needs_input', unblocks: 2 });
    expect(d.events.map((e) => e.kind)).toContain('escalated_to_triage');
    expect((await tick()).claimed).not.toContain(t.id);
  });

  it('refuses a worker changing another task, and a reclaimed run completing its old task', async () => {
    const mine = await create('mine');
    const other = await create('other');
    await tick();
    const { worker } = await startRun(mine.id);
    await expect(rt.db.tx((sql) => completeTask(sql, worker, other.id, { summary: 'x' }, now))).rejects.toThrow(/may not change/);
    await expect(rt.db.tx((sql) => unblockTask(sql, worker, other.id, now))).rejects.toThrow(/cannot unblock/);
    await rt.db.tx((sql) => blockTask(sql, scope, mine.id, { reason: 'a person took it back' }, now));
    await expect(rt.db.tx((sql) => completeTask(sql, worker, mine.id, { summary: 'late' }, now))).rejects.toThrow(/no longer holds/);
  });

  it('checks created_cards against what this run created; any kanban call of the run is a heartbeat', async () => {
    const t = await create('fan out');
    await tick();
    const { worker, started, run } = await startRun(t.id);
    const sub = await rt.db.tx(async (sql) => (await createTask(sql, worker, { title: 'sub', assignee: 'demo' }, now)).task);
    expect(sub.createdBy).toBe(worker.actor);
    await expect(rt.db.tx((sql) => completeTask(sql, worker, t.id, { summary: 'x', createdCards: [sub.id, 't_ffffffffffff'] }, now))).rejects.toThrow(/did not create on this board: t_ffffffffffff/);

    advance(600);
    const access = pgKanbanAccess(rt.db, started.admission, { claimTtlSeconds: 900, now: () => now.getTime() });
    await access.run((sql, scope) => showTask(sql, scope, t.id));
    expect((await currentRun(t.id)).heartbeatAt.getTime()).toBe(now.getTime());
    await expect(access.run(async () => 'x', 'ops')).resolves.toBe('x'); // its own board, by name
    await expect(access.run(async () => 'x', 'another')).rejects.toThrow(/reaches only its own board/);

    await access.run((sql, scope) => completeTask(sql, scope, t.id, { summary: 'split in one', createdCards: [sub.id] }, now));
    expect((await detail(t.id)).task.status).toBe('done');
    expect((await detail(t.id)).runs.find((r) => r.id === run.id)).toMatchObject({ outcome: 'completed' });
  });

  it('two dispatchers racing claim each task exactly once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await create(`race ${i}`)).id);
    const other = openDb(rt.config.DATABASE_URL, { max: 10 });
    try {
      const [a, b] = await Promise.all([tick(), tick(other)]);
      const all = [...a.claimed, ...b.claimed].filter((id) => ids.includes(id));
      expect(new Set(all).size).toBe(all.length);
      expect(all.sort()).toEqual([...ids].sort());
      const runs = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM kanban_runs WHERE task_id = ANY($1)`, [ids]);
      expect(runs.rows[0]!.n).toBe(30);
    } finally {
      await other.close();
    }
  });

  it('stops at once when the stop lands during a tick, not after a whole tick period', async () => {
    // An hour between ticks: a stop that waited out the period would time this test out (and held
    // a gateway's close past fastify's plugin timeout before the fix).
    const config = { ...rt.config, HERMES_KANBAN_TICK_SECONDS: 3_600 };
    let stopping: Promise<void> | undefined;
    const d = runKanbanDispatcher({ ...rt, config, clock: () => now, tuning: { pingMs: 50 }, onTick: () => { stopping ??= d.stop(); } });
    await eventually(() => stopping !== undefined, 'the first tick');
    await stopping;
    expect(d.leading).toBe(false);
  });

  it('runs one active dispatcher across replicas: the second takes over when the first stops', async () => {
    const config = { ...rt.config, HERMES_KANBAN_TICK_SECONDS: 0.05 };
    const ticks = { a: 0, b: 0 };
    const tuning = { pingMs: 50, pingTimeoutMs: 2_000 };
    const a = runKanbanDispatcher({ ...rt, config, clock: () => now, tuning, onTick: () => { ticks.a++; } });
    await eventually(() => ticks.a > 2, 'the first dispatcher ticking');
    const b = runKanbanDispatcher({ ...rt, config, clock: () => now, tuning, onTick: () => { ticks.b++; } });
    try {
      const before = ticks.a;
      await eventually(() => ticks.a > before + 5, 'the first dispatcher still ticking');
      expect(b.leading).toBe(false);
      expect(ticks.b).toBe(0);
      await a.stop();
      await eventually(() => ticks.b > 0, 'the second dispatcher taking over');
      expect(b.leading).toBe(true);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
