// Delegation (issue 14 point 3): delegate_task spawns children as their own queued turns (their own
// sessions, platform subagent), run by the worker like any turn; a finished batch comes back to the
// parent session as a new turn; limits, depth, the children's tools and budget; /stop of the parent
// stops them; a child that fails or goes stale ends `failed` with the error; the children's usage
// counts in the parent's conversation. Real Postgres and Redis; the model is the fake OpenAI server.
import { describe, expect, it } from 'vitest';
import { MAX_ROUNDS_WITHOUT_PERSON, getAdmission, getObligationForAdmission, listSubagents, spawnSubagents, steerSubagent, stopSubagents, sweepOnce, type Admission } from '../../../services/core/index.js';
import { eventually } from '../../support/services.js';
import { lastUser, type ChatRequestBody, type Script } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, testApiKey, useGatewaySystem } from '../../support/system.js';

const firstUser = (b: ChatRequestBody) => b.messages.find((m) => m.role === 'user')?.content ?? '';
const isChild = (b: ChatRequestBody) => firstUser(b).startsWith('You are a subagent');
const goalOf = (b: ChatRequestBody) => /# Goal\n(.*)/.exec(firstUser(b))?.[1] ?? '';
/** The result of a tool called in this turn (after the last user message), if any. */
const toolResult = (b: ChatRequestBody) => b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user')).find((m) => m.role === 'tool')?.content;
const offered = (b: ChatRequestBody) => (b.tools ?? []).map((t) => t.function.name).sort();

type Tasks = { goal: string; context?: string; output_schema?: Record<string, unknown> }[];
const releases: (() => void)[] = [];

/** The parent: "delegate <json tasks>" calls delegate_task once, then says "spawned"; a results message is answered "results: <it>". */
function parentScript(b: ChatRequestBody): Script {
  const user = lastUser(b);
  if (user.startsWith('[Delegated task results') && user.includes('again done')) {
    // A model that delegates once more on every batch's results.
    const result = toolResult(b);
    return result === undefined ? { toolCalls: [{ id: 'd1', name: 'delegate_task', arguments: JSON.stringify({ tasks: [{ goal: 'again' }] }) }] } : { text: `respawn: ${result}` };
  }
  if (user.startsWith('[Delegated task results')) return { text: `results seen: ${user.includes('alpha done') && user.includes('beta done') ? 'both' : 'some'}` };
  const m = /^delegate (.*)$/s.exec(user);
  // "call <json>": delegate_task with exactly these arguments.
  const raw = /^call (.*)$/s.exec(user);
  if (!m && !raw) return { text: 'ok' };
  const result = toolResult(b);
  if (result !== undefined) return { text: `spawned: ${result}` };
  return { toolCalls: [{ id: 'd1', name: 'delegate_task', arguments: raw ? raw[1]! : JSON.stringify({ tasks: JSON.parse(m![1]!) as Tasks }) }] };
}

/** The children, by goal: alpha/beta answer, crash fails (401), hang/slow wait to be released, spin calls get_time forever. */
function childScript(b: ChatRequestBody): Script {
  const goal = goalOf(b);
  if (goal === 'crash') return { status: 401, errorMessage: 'child key revoked' };
  if (goal === 'spin') return { toolCalls: [{ id: `s${b.messages.length}`, name: 'get_time', arguments: '{}' }] };
  if (goal === 'hang' || goal === 'slow') return { hold: new Promise<void>((r) => releases.push(r)), text: `${goal} done` };
  return { text: `${goal} done` };
}

const sys = useGatewaySystem((b) => (isChild(b) ? childScript(b) : parentScript(b)));

async function agent(name: string, extra: Record<string, unknown> = {}): Promise<string> {
  return createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name }, toolsets: ['delegation', 'memory', 'clock'], ...extra });
}

const delegate = (agentId: string, key: string, tasks: Tasks) => runTurn(sys.rt, { agentId, sessionKey: key, content: `delegate ${JSON.stringify(tasks)}` });

/** The parent session's admission carrying a batch's results, once terminal. */
async function resultsTurn(sessionId: string): Promise<{ a: Admission; reply: string }> {
  const a = await eventually(async () => {
    const { rows } = await sys.rt.db.pool.query<{ id: string }>(`SELECT id FROM admissions WHERE session_id = $1 AND content LIKE '[Delegated task results%'`, [sessionId]);
    if (rows.length > 1) throw new Error(`${rows.length} result turns`);
    const row = rows[0] && (await getAdmission(sys.rt.db.pool, rows[0].id));
    return row?.state === 'terminal' ? row : undefined;
  }, 'the results turn of the parent session');
  return { a, reply: (await getObligationForAdmission(sys.rt.db.pool, a.id))!.content };
}

const spawnedIds = (reply: string) => (JSON.parse(reply.replace(/^spawned: /, '')) as { subagents: { subagent_id: string }[] }).subagents.map((s) => s.subagent_id);

describe('delegate_task', () => {
  it('runs each child as its own queued turn and brings the batch\'s results back as a new turn of the parent', async () => {
    const agentId = await agent('deleg-main');
    const { a: parent, reply } = await delegate(agentId, 'deleg:main', [{ goal: 'alpha', context: 'ctx-a' }, { goal: 'beta', output_schema: { type: 'object' } }]);
    expect(reply).toMatch(/^spawned: .*"status":"spawned"/);
    expect(spawnedIds(reply)).toHaveLength(2);

    const { a: results, reply: answer } = await resultsTurn(parent.sessionId);
    expect(results.outcome).toBe('completed');
    expect(results.platform).toBe('api');
    expect(answer).toBe('results seen: both');
    expect(results.content).toMatch(/## Subagent .*: completed\nGoal: alpha\nResult:\nalpha done/);

    const children = await listSubagents(sys.rt.db.pool, parent.sessionId);
    expect(children.map((c) => [c.goal, c.status, c.result]).sort()).toEqual([['alpha', 'completed', 'alpha done'], ['beta', 'completed', 'beta done']]);
    for (const c of children) {
      // Its own turn in its own session, on the subagent platform; nothing delivered to a chat.
      const child = (await getAdmission(sys.rt.db.pool, c.childAdmissionId))!;
      expect([child.platform, child.state, child.outcome]).toEqual(['subagent', 'terminal', 'completed']);
      expect(child.sessionId).not.toBe(parent.sessionId);
      expect(c.childSessionId).toBe(child.sessionId);
    }
    const alpha = sys.model.requests.find((r) => isChild(r.body) && goalOf(r.body) === 'alpha')!.body;
    expect(firstUser(alpha)).toContain('# Context\nctx-a');
    expect(firstUser(sys.model.requests.find((r) => isChild(r.body) && goalOf(r.body) === 'beta')!.body)).toContain('"type": "object"');
    // Children never get delegate_task (depth 1) nor memory; the parent had both.
    expect(offered(alpha)).toEqual(['get_time', 'read_tool_result']);
    expect(offered(sys.model.requests.find((r) => lastUser(r.body).startsWith('delegate [{"goal":"alpha"'))!.body)).toEqual(['delegate_task', 'get_time', 'memory', 'read_tool_result']);
    // A child's turn cannot spawn either (depth 1), even through the ledger.
    expect(await spawnSubagents(sys.rt.db, children[0]!.childAdmissionId, [{ goal: 'deeper' }], 10)).toEqual({ ok: false, reason: expect.stringMatching(/depth is 1/) as unknown });

    // The children's calls count in the parent's conversation (and so against its person's and agent's caps).
    const { rows } = await sys.rt.db.pool.query<{ task: string; session: string; user: string | null }>(
      `SELECT task, session_id AS session, user_id AS user FROM model_call_usage WHERE admission_id = ANY($1::uuid[])`, [children.map((c) => c.childAdmissionId)]);
    expect(rows.map((r) => [r.task, r.session, r.user])).toEqual([['subagent', parent.sessionId, parent.userId], ['subagent', parent.sessionId, parent.userId]]);
    const usage = await runTurn(sys.rt, { agentId, sessionKey: 'deleg:main', content: '/usage' });
    expect(usage.reply).toMatch(/delegated tasks \(subagents\) 2/);
  });

  it('takes Hermes\' single-task form (goal and context at the top level) as a batch of one; refuses goal together with tasks', async () => {
    const agentId = await agent('deleg-single');
    const { a: parent, reply } = await runTurn(sys.rt, { agentId, sessionKey: 'deleg:single', content: `call ${JSON.stringify({ goal: 'alpha', context: 'the alpha facts' })}` });
    expect(spawnedIds(reply)).toHaveLength(1);
    // The child runs as its own queued turn: its model call is looked for once its results are back.
    expect((await resultsTurn(parent.sessionId)).reply).toBe('results seen: some');
    const child = sys.model.requests.find((r) => isChild(r.body) && goalOf(r.body) === 'alpha' && firstUser(r.body).includes('the alpha facts'));
    expect(child).toBeDefined();
    const both = await runTurn(sys.rt, { agentId, sessionKey: 'deleg:single-both', content: `call ${JSON.stringify({ goal: 'alpha', tasks: [{ goal: 'beta' }] })}` });
    expect(both.reply).toContain('give goal (one task) or tasks (a batch), not both');
    expect(await listSubagents(sys.rt.db.pool, both.a.sessionId)).toEqual([]);
  });

  it('refuses a spawn past the concurrent-children limit, as a tool result, spawning none', async () => {
    const agentId = await agent('deleg-limit', { delegation: { maxConcurrentChildren: 2 } });
    const { a: parent, reply } = await delegate(agentId, 'deleg:limit', [{ goal: 'alpha' }, { goal: 'beta' }, { goal: 'gamma' }]);
    expect(reply).toContain('at most 2 subagents may run at once in this conversation: 0 are running and 3 were asked for');
    expect(await listSubagents(sys.rt.db.pool, parent.sessionId)).toEqual([]);
  });

  it('bounds the rounds a conversation delegates in a row, each started by the results of the one before, without a person', async () => {
    const agentId = await agent('deleg-rounds');
    const { a: parent } = await delegate(agentId, 'deleg:rounds', [{ goal: 'again' }]);
    const replies = await eventually(async () => {
      const { rows } = await sys.rt.db.pool.query<{ id: string; state: string }>(
        `SELECT id, state FROM admissions WHERE session_id = $1 AND content LIKE '[Delegated task results%' ORDER BY seq`, [parent.sessionId]);
      if (rows.length < MAX_ROUNDS_WITHOUT_PERSON || rows.some((r) => r.state !== 'terminal')) return undefined;
      return Promise.all(rows.map(async (r) => (await getObligationForAdmission(sys.rt.db.pool, r.id))?.content ?? ''));
    }, 'the results turns of the parent session');
    expect(replies).toHaveLength(MAX_ROUNDS_WITHOUT_PERSON);
    for (const reply of replies.slice(0, -1)) expect(reply).toMatch(/^respawn: .*"status":"spawned"/);
    expect(replies.at(-1)).toMatch(/^respawn: .*"status":"error".*delegated 3 rounds in a row.*without a message from the user/);
    // A person's message starts the count again.
    expect((await delegate(agentId, 'deleg:rounds', [{ goal: 'alpha' }])).reply).toMatch(/"status":"spawned"/);
  });

  it('gives each child a fresh iteration budget of its own (Profile spec.delegation.maxIterations)', async () => {
    const agentId = await agent('deleg-budget', { maxIterations: 2, delegation: { maxIterations: 3 } });
    const { a: parent } = await delegate(agentId, 'deleg:budget', [{ goal: 'spin' }]);
    const { a: results } = await resultsTurn(parent.sessionId);
    const [child] = await listSubagents(sys.rt.db.pool, parent.sessionId);
    expect(child!.status).toBe('completed');
    expect(child!.result).toMatch(/I stopped after 3 model calls/);
    expect(sys.model.requests.filter((r) => isChild(r.body) && goalOf(r.body) === 'spin')).toHaveLength(3);
    expect(results.content).toContain('I stopped after 3 model calls');
  });

  it('reports a child whose turn failed as failed, with the error, in the results turn', async () => {
    const agentId = await agent('deleg-crash');
    const { a: parent } = await delegate(agentId, 'deleg:crash', [{ goal: 'crash' }, { goal: 'alpha' }]);
    const { a: results } = await resultsTurn(parent.sessionId);
    const crashed = (await listSubagents(sys.rt.db.pool, parent.sessionId)).find((c) => c.goal === 'crash')!;
    expect(crashed.status).toBe('failed');
    expect(crashed.error).toMatch(/401/);
    expect(results.content).toContain(`## Subagent ${crashed.id}: failed\nGoal: crash\nError: `);
    expect(results.content).toMatch(/Goal: alpha\nResult:\nalpha done/);
  });

  it('stops the children when the parent is stopped (/stop), without a results turn', async () => {
    const agentId = await agent('deleg-stop');
    const { a: parent } = await delegate(agentId, 'deleg:stop', [{ goal: 'slow' }]);
    const call = await eventually(() => sys.model.inFlight().find((r) => goalOf(r.body) === 'slow'), 'the child calling the model');
    const stop = await runTurn(sys.rt, { agentId, sessionKey: 'deleg:stop', content: '/stop' });
    expect(stop.reply).toBe('Stopped 1 delegated task(s).');
    const [child] = await eventually(async () => {
      const rows = await listSubagents(sys.rt.db.pool, parent.sessionId);
      return rows[0]?.status === 'stopped' ? rows : undefined;
    }, 'the child stopped');
    await eventually(() => call.aborted || undefined, 'the child\'s model call aborted'); // seen when its socket closes
    expect((await getAdmission(sys.rt.db.pool, child!.childAdmissionId))!.outcome).toBe('interrupted');
    const { rows } = await sys.rt.db.pool.query(`SELECT 1 FROM admissions WHERE session_id = $1 AND content LIKE '[Delegated task results%'`, [parent.sessionId]);
    expect(rows).toEqual([]);
  });

  it('stops the children when /new leaves the conversation; their results never come back as a turn of it', async () => {
    await agent('deleg-new');
    const post = async (content: string) => {
      const res = await fetch(`${sys.gateway.url}/v1/agents/default/deleg-new/messages`, {
        method: 'POST', headers: { authorization: `Bearer ${testApiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ content, conversation: 'left' }),
      });
      return (await res.json()) as { admissionId: string; sessionId: string };
    };
    const parent = await post(`delegate ${JSON.stringify([{ goal: 'slow' }])}`);
    const call = await eventually(() => sys.model.inFlight().find((r) => goalOf(r.body) === 'slow'), 'the child calling the model');
    await eventually(async () => ((await getAdmission(sys.rt.db.pool, parent.admissionId))?.state === 'terminal' ? true : undefined), 'the parent turn ended');
    const fresh = await post('/new');
    expect((await getObligationForAdmission(sys.rt.db.pool, fresh.admissionId))?.content).toBe('Started a new conversation; the previous one is kept. Stopped 1 delegated task(s).');
    // The stop reaches the child's turn through its signal: its model call is cut (seen when the
    // socket closes). Released only then — released at once, the answer could beat the signal.
    await eventually(() => call.aborted || undefined, 'the child\'s model call aborted');
    for (const release of releases.splice(0)) release(); // a child that ignored the stop would now finish
    const [child] = await eventually(async () => {
      const rows = await listSubagents(sys.rt.db.pool, parent.sessionId);
      return rows[0] && rows[0].status !== 'running' && rows[0].status !== 'queued' ? rows : undefined;
    }, 'the child ended');
    expect(child!.status).toBe('stopped');
    await sweepOnce(sys.rt.db, sys.rt.queues, sys.rt.config);
    const { rows } = await sys.rt.db.pool.query(`SELECT 1 FROM admissions WHERE session_id = $1 AND content LIKE '[Delegated task results%'`, [parent.sessionId]);
    expect(rows).toEqual([]);
  });

  it('narrows a child\'s tools as the parent\'s platform narrows them: delegating never widens the toolsets', async () => {
    // A child runs on platform "subagent", which no Agent narrows: a Telegram conversation limited
    // to [clock, delegation] got children with every toolset of the Profile.
    const telegram = { type: 'telegram', credentialsSecret: 'tg', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention', toolsets: ['clock', 'delegation'] };
    const agentId = await agent('deleg-narrow', { toolsets: ['delegation', 'clock', 'todo'], platforms: [telegram] });
    const { a: parent } = await runTurn(sys.rt, { agentId, sessionKey: 'deleg:narrow', content: `delegate ${JSON.stringify([{ goal: 'narrowed' }])}`, platform: 'telegram' });
    await resultsTurn(parent.sessionId);
    const parentCall = sys.model.requests.find((r) => !isChild(r.body) && lastUser(r.body).startsWith('delegate [{"goal":"narrowed"'))!;
    expect(offered(parentCall.body)).toEqual(['delegate_task', 'get_time', 'read_tool_result']);
    const childCall = sys.model.requests.find((r) => isChild(r.body) && goalOf(r.body) === 'narrowed')!;
    expect(offered(childCall.body)).toEqual(['get_time', 'read_tool_result']);
  });

  it('answers steer and stop of an id that names no subagent (not a UUID) or an ended one with a clear error', async () => {
    // A model's typo ("sub-1") reached Postgres as a uuid and came back as
    // "[TOOL_ERROR] invalid input syntax for type uuid".
    const agentId = await agent('deleg-bad-id');
    const { a: parent } = await delegate(agentId, 'deleg:bad-id', [{ goal: 'alpha' }]);
    await resultsTurn(parent.sessionId);
    expect(await steerSubagent(sys.rt.db.pool, parent.sessionId, 'sub-1', 'more')).toEqual({ ok: false, reason: 'no subagent sub-1 in this conversation (action "list" shows them)' });
    expect(await stopSubagents(sys.rt.db.pool, parent.sessionId, 'sub-1')).toEqual({ ids: [], signals: [] });
    const [done] = await listSubagents(sys.rt.db.pool, parent.sessionId);
    expect(await steerSubagent(sys.rt.db.pool, parent.sessionId, done!.id, 'more')).toEqual({ ok: false, reason: `subagent ${done!.id} has already ended (completed)` });
  });

  it('stops a child that has not started yet at once; its turn then ends without a model call', async () => {
    const agentId = await agent('deleg-stop-queued');
    const { a: parent } = await runTurn(sys.rt, { agentId, sessionKey: 'deleg:stop-queued', content: 'hello' });
    // Spawned in the ledger and not enqueued yet (the sweeper enqueues it after its grace period).
    const spawned = await spawnSubagents(sys.rt.db, parent.id, [{ goal: 'never-run' }], 10);
    if (!spawned.ok) throw new Error(spawned.reason);
    const stopped = await stopSubagents(sys.rt.db.pool, parent.sessionId);
    expect([stopped.ids, stopped.signals]).toEqual([[spawned.spawned[0]!.id], []]);
    const [row] = await listSubagents(sys.rt.db.pool, parent.sessionId);
    expect([row!.status, row!.error]).toEqual(['stopped', 'stopped before it started']);
    const child = await eventually(async () => {
      const a = await getAdmission(sys.rt.db.pool, row!.childAdmissionId);
      return a?.state === 'terminal' ? a : undefined;
    }, 'the stopped child\'s turn ends');
    expect(child.outcome).toBe('interrupted');
    expect(sys.model.requests.filter((r) => goalOf(r.body) === 'never-run')).toEqual([]);
  });

  it('fails a child that made no progress for 15 heartbeat cycles (sweeper), and reports it; its late end changes nothing', async () => {
    const agentId = await agent('deleg-stale');
    const { a: parent } = await delegate(agentId, 'deleg:stale', [{ goal: 'hang' }]);
    await eventually(() => sys.model.inFlight().find((r) => goalOf(r.body) === 'hang'), 'the child calling the model');
    const [running] = await listSubagents(sys.rt.db.pool, parent.sessionId);
    expect(running!.status).toBe('running');
    // 15 cycles of 30 s without a beat (the clock is the database's: its heartbeat is moved back, not waited for).
    await sys.rt.db.pool.query(`UPDATE subagents SET heartbeat_at = now() - interval '451 seconds' WHERE id = $1`, [running!.id]);
    await sweepOnce(sys.rt.db, sys.rt.queues, sys.rt.config); // (the worker's own sweeper may get there first: the same, once)
    const { a: results } = await resultsTurn(parent.sessionId);
    expect(results.content).toMatch(/: failed\nGoal: hang\nError: stale: no progress heartbeat for 450 seconds \(15 heartbeat cycles\)/);
    for (const release of releases.splice(0)) release();
    await eventually(async () => (await getAdmission(sys.rt.db.pool, running!.childAdmissionId))?.state === 'terminal', 'the hung child ends');
    const [after] = await listSubagents(sys.rt.db.pool, parent.sessionId);
    expect([after!.status, after!.result]).toEqual(['failed', null]);
  });
});
