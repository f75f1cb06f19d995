// Kanban turns through a real worker and a fake model: a dispatched turn is offered its task's
// lifecycle tools (not list/unblock) and closes its task with kanban_complete; a Profile that
// lists the kanban toolset reaches only the person's own board; and a worker process SIGKILLed
// mid-run is found dead by its instance id, its run settled crashed, the turn never re-run.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminScope, createTask, dispatchTick, namedBoard, personalBoard, showTask, type CompiledAgent, type DispatchPolicy, type KanbanScope } from '../../../services/core/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { lastUser, startFakeOpenAI, toldResult, toolsAsTold, type ChatRequestBody, type FakeOpenAI, type Script } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, runTurn, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';

const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));
let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker | undefined;
let child: ChildProcess | undefined;
let scope: KanbanScope;
const never = new Promise<void>(() => undefined);
const policy: DispatchPolicy = { failureLimit: 2, claimTtlSeconds: 900, staleSeconds: 1800, maxRuntimeSeconds: 14_400, claimsPerTick: 50 };
const tick = () => dispatchTick({ db: rt.db, queues: rt.queues, redis: rt.redis, queuePrefix: rt.config.HERMES_QUEUE_PREFIX, policy, log: rt.log, rule: { instanceTtlSeconds: 3, steady: true } }, new Date());
const offered = (b: ChatRequestBody) => (b.tools ?? []).map((t) => t.function.name).filter((n) => n.startsWith('kanban_')).sort();

function script(b: ChatRequestBody): Script {
  const first = b.messages.find((m) => m.role === 'user')?.content ?? '';
  if (first.includes('Title: stall')) return { hold: never };
  if (first.includes('Title: ship it')) {
    return b.messages.some((m) => m.role === 'tool') ? { text: 'shipped it' } : { toolCalls: [{ id: 'c1', name: 'kanban_complete', arguments: JSON.stringify({ summary: 'shipped v1', artifacts: ['/workspace/out/report.pdf'] }) }] };
  }
  return toolsAsTold(b);
}

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url));
  await createTestAgent(rt, model.baseURL);
  await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'orch' }, toolsets: ['clock', 'kanban'] });
  scope = adminScope(await namedBoard(rt.db.pool, { namespace: 'default', agent: 'demo' }, true), 'test');
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

const create = (title: string) => rt.db.tx(async (sql) => (await createTask(sql, scope, { title, assignee: 'demo' }, new Date())).task);

describe('Kanban turns', () => {
  it('a dispatched turn gets its task\'s lifecycle tools and completes the task', async () => {
    worker = await startTestWorker(rt);
    const t = await create('ship it');
    expect((await tick()).claimed).toContain(t.id);
    const done = await eventually(async () => {
      const d = await showTask(rt.db.pool, scope, t.id);
      return d.task.status === 'done' ? d : undefined;
    }, 'the task done');
    expect(done.task.result).toBe('shipped v1');
    expect(done.runs[0]).toMatchObject({ outcome: 'completed', summary: 'shipped v1' });
    expect(done.attachments.map((a) => a.ref)).toEqual(['workspace:/workspace/out/report.pdf']);
    const call = model.requests.find((r) => (r.body.messages.find((m) => m.role === 'user')?.content ?? '').includes('Title: ship it'))!;
    expect(offered(call.body)).toEqual(['kanban_block', 'kanban_comment', 'kanban_complete', 'kanban_create', 'kanban_heartbeat', 'kanban_link', 'kanban_show']);
    // The turn ends after the tool; the next tick finds nothing to settle (no protocol violation).
    await eventually(async () => (await rt.db.pool.query(`SELECT 1 FROM admissions WHERE id = $1 AND state = 'terminal'`, [done.runs[0]!.admissionId])).rowCount === 1, 'turn terminal');
    expect((await tick()).settled).toBe(0);
  });

  it('offers the kanban toolset only where the Profile lists it, on the person\'s own board', async () => {
    const plain = await runTurn(rt, { agentId: (await rt.db.pool.query<{ id: string }>(`SELECT id FROM agents WHERE name = 'demo'`)).rows[0]!.id, sessionKey: 'k:plain', content: 'hello' });
    expect(plain.reply).toBe('ok');
    expect(offered(model.requests.at(-1)!.body)).toEqual([]);

    const orch = (await rt.db.pool.query<{ id: string }>(`SELECT id FROM agents WHERE name = 'orch'`)).rows[0]!.id;
    const made = await runTurn(rt, { agentId: orch, sessionKey: 'k:alice', userId: 'alice', content: 'tool kanban_create {"title":"plan the trip","assignee":"orch"}' });
    const created = toldResult(made.reply);
    expect(created).toMatchObject({ ok: true, status: 'todo' });
    expect(offered(model.requests.at(-1)!.body)).toContain('kanban_list');

    const foreign = await runTurn(rt, { agentId: orch, sessionKey: 'k:alice', userId: 'alice', content: 'tool kanban_create {"title":"x","assignee":"demo"}' });
    expect(toldResult(foreign.reply).error).toMatch(/only be assigned to the board's own agent/);

    const mallory = await runTurn(rt, { agentId: orch, sessionKey: 'k:mallory', userId: 'mallory', content: `tool kanban_show {"task_id":"${String(created.task_id)}"}` });
    expect(toldResult(mallory.reply).error).toMatch(/No task/);
    const listed = await runTurn(rt, { agentId: orch, sessionKey: 'k:mallory', userId: 'mallory', content: 'tool kanban_list {}' });
    expect(toldResult(listed.reply)).toMatchObject({ count: 0 });
    const alice = await runTurn(rt, { agentId: orch, sessionKey: 'k:alice', userId: 'alice', content: 'tool kanban_list {}' });
    expect(toldResult(alice.reply)).toMatchObject({ count: 1 });
  });

  it('a task on a person\'s board runs with no more tools than that person\'s own turns: their platform\'s narrowing, their grants', async () => {
    const hook: NonNullable<CompiledAgent['platforms']>[number] = { type: 'webhook', credentialsSecret: 'hooks', allowlist: [], allowAll: false, dmPairing: false, groupPolicy: 'mention' };
    const access: CompiledAgent['access'] = { default: { toolsets: ['clock'] }, groups: [], users: [{ match: 'api:alice', toolsets: ['todo'] }] };
    const hooked = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'hooked' }, toolsets: ['clock', 'todo'], platforms: [hook] });
    const team = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'team' }, toolsets: ['clock', 'todo'], access });
    const toolsOf = (b: ChatRequestBody) => (b.tools ?? []).map((t) => t.function.name).filter((n) => !n.startsWith('kanban_')).sort();
    /** A task on `user`'s own board (as `/kanban create` makes it), dispatched: the tools its turn was offered. */
    const dispatched = async (agent: { id: string; name: string }, platform: string, user: string, title: string) => {
      await runTurn(rt, { agentId: agent.id, sessionKey: `${agent.name}:${platform}:${user}`, userId: user, platform, content: 'hello' });
      const userId = (await rt.db.pool.query<{ id: string }>(`SELECT id FROM users WHERE platform = $1 AND platform_user_id = $2`, [platform, user])).rows[0]!.id;
      const board = (sql: Parameters<typeof personalBoard>[0]) => personalBoard(sql, agent.id, userId);
      const task = await rt.db.tx(async (sql) => (await createTask(sql, { mode: 'orchestrator', boardId: await board(sql), agentId: agent.id, actor: `user:${userId}` }, { title, assignee: agent.name }, new Date())).task);
      expect((await tick()).claimed).toContain(task.id);
      const call = await eventually(async () => model.requests.find((r) => (r.body.messages.find((m) => m.role === 'user')?.content ?? '').includes(`Title: ${title}`)), `the turn of ${title}`);
      return toolsOf(call.body);
    };
    // The webhook's own turns get clock only (WEBHOOK_DEFAULT_TOOLSETS); its task's turn no more.
    expect(await dispatched({ id: hooked, name: 'hooked' }, 'webhook', 'ci', 'from the hook')).toEqual(['get_time', 'read_tool_result']);
    expect(await dispatched({ id: hooked, name: 'hooked' }, 'api', 'ci', 'from the api')).toEqual(['get_time', 'read_tool_result', 'todo']);
    // spec.access: bob has the default (clock), alice also todo — each task runs with its person's grants.
    expect(await dispatched({ id: team, name: 'team' }, 'api', 'bob', 'for bob')).toEqual(['get_time', 'read_tool_result']);
    expect(await dispatched({ id: team, name: 'team' }, 'api', 'alice', 'for alice')).toEqual(['get_time', 'read_tool_result', 'todo']);
  });

  it('a worker SIGKILLed mid-run: found dead by instance id, the run crashed and counted, the turn not re-run', async () => {
    await worker?.close();
    worker = undefined;
    const c = rt.config;
    child = spawn(process.execPath, [bin, 'worker'], {
      env: {
        PATH: process.env.PATH, DATABASE_URL: c.DATABASE_URL, REDIS_URL: c.REDIS_URL, HERMES_QUEUE_PREFIX: c.HERMES_QUEUE_PREFIX, HERMES_HEARTBEAT_SECONDS: '1', HERMES_INSTANCE_TTL_SECONDS: '3',
        HERMES_LEASE_TTL_SECONDS: '600', HERMES_LOG_LEVEL: 'warn', OPENAI_API_KEY: 'sk-test', HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY', HERMES_WORKER_PORT: '0',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const t = await create('stall');
    expect((await tick()).claimed).toContain(t.id);
    const seen = await eventually(() => model.inFlight().find((r) => (r.body.messages.find((m) => m.role === 'user')?.content ?? '').includes('Title: stall')), 'the run\'s model call in flight', 60_000);
    await eventually(async () => { await tick(); return (await showTask(rt.db.pool, scope, t.id)).runs[0]?.status === 'running'; }, 'the run observed running');

    child.kill('SIGKILL');
    await eventually(() => seen.aborted, 'the dead worker\'s connection closed');
    const crashed = await eventually(async () => {
      await tick();
      const d = await showTask(rt.db.pool, scope, t.id);
      return d.runs[0]?.outcome === 'crashed' ? d : undefined;
    }, 'the run crashed', 30_000, 250);
    expect(crashed.runs[0]!.error).toMatch(/^worker instance [0-9a-f-]{36} is gone$/);
    expect(crashed.task.consecutiveFailures).toBe(1);
    expect(model.requests.filter((r) => lastUser(r.body).includes('Title: stall'))).toHaveLength(1);
  });
});
