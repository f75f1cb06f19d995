// The Kanban surfaces besides the tools: `/kanban` in chat (the sender's own board, answered at
// admission without the model), the admin API (token-gated, operator boards, HTTP errors from the
// board's rules) and `hermes kanban` on the CLI (every subcommand has --help).
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addComment, getObligationForAdmission } from '../../../services/core/index.js';
import { buildGatewayApp } from '../../../services/gateway/index.js';
import { kanbanCommand } from '../../../services/cli/kanban.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, testApiKey, type TestRuntime } from '../../support/system.js';

const adminToken = 'admin-token-0123456789abcdef';
let database: TestDatabase;
let rt: TestRuntime;
let app: FastifyInstance;

beforeAll(async () => {
  database = await createTestDatabase();
  rt = await openTestRuntime(testConfig(database.url, { HERMES_ADMIN_TOKEN: adminToken }));
  await createTestAgent(rt, 'http://127.0.0.1:9');
  await createTestAgent(rt, 'http://127.0.0.1:9', { agent: { namespace: 'default', name: 'helper' } });
  await createTestAgent(rt, 'http://127.0.0.1:9', { agent: { namespace: 'other', name: 'outsider' } });
  app = buildGatewayApp({ ...rt, tuning: { pollMs: 50 } });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await rt?.close();
  await database?.drop();
});

async function chat(content: string, user: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/v1/agents/default/demo/messages', headers: { authorization: `Bearer ${testApiKey}` }, payload: { content, conversation: `c-${user}`, user: { id: user } } });
  expect(res.statusCode).toBe(202);
  const p = res.json<{ admissionId: string; state: string }>();
  expect(p.state).toBe('terminal'); // answered at admission: no turn, no model
  return (await getObligationForAdmission(rt.db.pool, p.admissionId))!.content;
}

const admin = (method: 'GET' | 'POST', url: string, payload?: unknown, token = adminToken) =>
  app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload !== undefined ? { payload: payload as object } : {}) });

describe('/kanban in chat', () => {
  it('works on the sender\'s own board only', async () => {
    const created = await chat('/kanban create buy milk', 'alice');
    const id = /Created (t_[0-9a-f]{12})/.exec(created)?.[1];
    expect(id).toBeDefined();
    expect(created).toContain('→ default/demo');
    expect(await chat('/kanban list', 'alice')).toContain(`${id!} [todo] buy milk`);
    expect(await chat('/kanban', 'alice')).toContain('buy milk');
    expect(await chat('/kanban list', 'bob')).toBe('Your board has no open tasks.');
    // The board's words for the model name its tools; a chat user gets the subcommand.
    expect(await chat(`/kanban show ${id!}`, 'bob')).toBe(`No task ${id!} on this board (/kanban list shows its tasks).`);
    expect(await chat(`/kanban block ${id!} which brand?`, 'alice')).toBe(`Task ${id!} is blocked.`);
    expect(await chat(`/kanban comment ${id!} the cheap one`, 'alice')).toBe(`Commented on ${id!}.`);
    expect(await chat(`/kanban unblock ${id!}`, 'alice')).toBe(`Task ${id!} is ready.`);
    const { rows: [b] } = await rt.db.pool.query<{ boardId: string; agentId: string }>(
      'SELECT t.board_id AS "boardId", b.agent_id::text AS "agentId" FROM kanban_tasks t JOIN kanban_boards b ON b.id = t.board_id WHERE t.id = $1', [id]);
    await addComment(rt.db.pool, { mode: 'orchestrator', boardId: b!.boardId, agentId: b!.agentId, actor: `agent:${b!.agentId}` }, id!, 'from the agent', new Date());
    // Authors as people read them: "you", the agent's name — never the ledger's user:<uuid>.
    const shown = await chat(`/kanban show ${id!}`, 'alice');
    expect(shown).toContain('\nyou: the cheap one');
    expect(shown).toContain('\ndefault/demo: from the agent');
    expect(shown).not.toMatch(/user:|agent:/);
    expect(await chat('/kanban frobnicate', 'alice')).toContain('Unknown subcommand "frobnicate"');
  });
});

describe('Kanban admin API', () => {
  const base = '/v1/admin/agents/default/demo/kanban/ops/tasks';

  it('refuses without the admin token', async () => {
    expect((await admin('GET', '/v1/admin/kanban/boards', undefined, 'wrong-token-0123456789abcdef')).statusCode).toBe(401);
  });

  it('creates tasks with dependencies, assigns agents of the namespace only, and moves tasks through their states', async () => {
    const parent = await admin('POST', base, { title: 'gather', assignee: 'helper' });
    expect(parent.statusCode).toBe(201);
    const p = parent.json<{ id: string; status: string; assignee: string }>();
    expect(p).toMatchObject({ status: 'todo', assignee: 'default/helper' });
    const child = (await admin('POST', base, { title: 'report', assignee: 'demo', parents: [p.id] })).json<{ id: string }>();
    const again = await admin('POST', base, { title: 'gather', assignee: 'helper', idempotencyKey: 'k1' });
    expect(again.statusCode).toBe(201);
    expect((await admin('POST', base, { title: 'gather', assignee: 'helper', idempotencyKey: 'k1' })).json<{ id: string }>().id).toBe(again.json<{ id: string }>().id);

    const foreign = await admin('POST', base, { title: 'x', assignee: 'other/outsider' });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json<{ error: { code: string } }>().error.code).toBe('HERMES_KANBAN_NOT_FOUND');
    const cycle = await admin('POST', `${base}/${p.id}/links`, { parent: child.id });
    expect(cycle.statusCode).toBe(400);
    expect((await admin('POST', `${base}/${child.id}/attachments`, { name: 'secret', ref: '/etc/passwd' })).statusCode).toBe(400);
    expect((await admin('POST', `${base}/${child.id}/attachments`, { name: 'spec', ref: 'https://example.com/spec.pdf' })).statusCode).toBe(201);

    const done = await admin('POST', `${base}/${p.id}/complete`, { summary: 'gathered' });
    expect(done.json()).toMatchObject({ status: 'done', result: 'gathered' });
    expect((await admin('POST', `${base}/${p.id}/complete`, { summary: 'again' })).statusCode).toBe(409);
    const shown = (await admin('GET', `${base}/${child.id}`)).json<{ parents: { id: string; status: string }[]; attachments: { ref: string }[] }>();
    expect(shown.parents).toEqual([expect.objectContaining({ id: p.id, status: 'done' })]);
    expect(shown.attachments.map((a) => a.ref)).toEqual(['https://example.com/spec.pdf']);

    const list = (await admin('GET', `${base}?status=todo`)).json<{ tasks: { id: string }[] }>();
    expect(list.tasks.map((t) => t.id)).toContain(child.id);
    const boards = (await admin('GET', '/v1/admin/kanban/boards?namespace=default')).json<{ boards: { name: string; open: number }[] }>();
    expect(boards.boards.find((b) => b.name === 'ops')).toMatchObject({ open: 2 });
    expect((await admin('GET', '/v1/admin/agents/default/demo/kanban/nope/tasks')).statusCode).toBe(404);
  });
});

describe('hermes kanban', () => {
  /** Runs `hermes kanban …` in process (the command reads DATABASE_URL, set to the test database); stdout lines, or the error text. */
  async function cli(...args: string[]): Promise<{ out: string; err: string; code: number }> {
    const out: string[] = [];
    const err: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => { out.push(a.join(' ')); });
    const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => { err.push(a.join(' ')); });
    const saved = { url: process.env.DATABASE_URL, code: process.exitCode, run: process.env.HERMES_TEST_RUN };
    process.env.DATABASE_URL = rt.config.DATABASE_URL;
    delete process.env.HERMES_TEST_RUN; // the harness's marker is no setting of ours (the CLI refuses unknown HERMES_*)
    process.exitCode = 0;
    try {
      await kanbanCommand.parseAsync(args, { from: 'user' });
      return { out: out.join('\n'), err: err.join('\n'), code: Number(process.exitCode ?? 0) };
    } finally {
      log.mockRestore();
      error.mockRestore();
      process.env.DATABASE_URL = saved.url;
      process.exitCode = saved.code;
      if (saved.run !== undefined) process.env.HERMES_TEST_RUN = saved.run;
    }
  }

  it('creates, links, blocks and lists tasks on a board; every subcommand has help', async () => {
    const a = /Created (t_\w+)/.exec((await cli('create', 'default/demo/cli', 'first', '--assignee', 'demo')).out)![1]!;
    const b = /Created (t_\w+)/.exec((await cli('create', 'default/demo/cli', 'second')).out)![1]!;
    expect((await cli('link', 'default/demo/cli', a, b)).out).toContain(`${b} now waits for ${a}`);
    expect((await cli('block', 'default/demo/cli', a, 'need a key', '--kind', 'capability')).out).toBe(`Task ${a} is blocked.`);
    expect((await cli('list', 'default/demo/cli')).out).toMatch(new RegExp(`${a}\\s+blocked\\s+\\(capability\\)\\s+first\\s+→ default/demo`));
    const shown = JSON.parse((await cli('show', 'default/demo/cli', b, '--json')).out) as { parents: { id: string }[] };
    expect(shown.parents.map((p) => p.id)).toEqual([a]);
    const missing = await cli('show', 'default/demo/cli', 't_000000000000');
    expect(missing).toMatchObject({ code: 2, out: '' });
    expect(missing.err).toContain('No task t_000000000000');
    expect((await cli('list', 'nope')).err).toContain('NAMESPACE/AGENT[/BOARD]');
    const subs = kanbanCommand.commands.map((c) => c.name());
    expect(subs.sort()).toEqual(['archive', 'attach', 'block', 'boards', 'comment', 'complete', 'create', 'link', 'list', 'show', 'unblock']);
    for (const c of kanbanCommand.commands) expect(c.helpInformation()).toMatch(new RegExp(`^Usage: kanban ${c.name()} `));
  });
});
