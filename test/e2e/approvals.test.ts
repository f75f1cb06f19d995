// Approvals end to end through the message API: the fake model asks for a command through a
// test-only tool whose handler asks ctx.guard (the terminal tool is built elsewhere); the guard
// parks it in Postgres, the SSE stream shows `approval.pending`, `/approve` or `/deny` sent as a
// message decides it while the turn runs, and the `/approve` admission is answered without the
// model. Also: the timeout ("Silence is not consent"), another user cannot approve, smart mode
// through the same model (recorded with task `approval`), unattended (cron) turns deny, and a
// worker that dies while a command waits leaves it pending — a late /approve runs nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  acquireLease, admit, decideApproval, enqueueTurn, getAdmission, markStopped, parkApproval, publishRevision, readApproval, registerInstance, startNextTurn,
} from '../../services/core/index.js';
import { builtinRegistry, defineTool } from '../../services/agent/index.js';
import { startGatewayOn } from '../../services/cli/gateway.js';
import type { RunningGateway } from '../../services/gateway/index.js';
import type { RunningWorker } from '../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../support/services.js';
import { startFakeOpenAI, lastUser, type ChatRequestBody, type FakeOpenAI } from '../support/fake-openai.js';
import { openTestRuntime, runTurn, startTestWorker, testAgent, testApiKey, type TestRuntime } from '../support/system.js';
import { messageApi } from '../support/message-api.js';

/** What the terminal tool will do first: ask the guard; here it returns the decision instead of running anything. */
const ran: string[] = [];
const guarded = defineTool({
  name: 'guarded_command', description: 'Test only: asks the approval guard about a command.', toolset: 'test', sideEffect: 'external',
  schema: z.object({ command: z.string() }).strict(),
  handler: async ({ command }, ctx) => {
    if (!ctx.guard) return 'no guard';
    const d = await ctx.guard.check(command, ctx.signal);
    if (d.allowed) ran.push(command);
    return d.allowed ? `ALLOWED via ${d.via}` : d.message;
  },
});

let reviewerAnswer = 'APPROVE\nfine';
/** The tool result answering this turn's request (after the last user message), if any. */
const toolResult = (b: ChatRequestBody) => {
  const lastUserAt = b.messages.map((m) => m.role).lastIndexOf('user');
  return b.messages.slice(lastUserAt).find((m) => m.role === 'tool')?.content;
};
function script(b: ChatRequestBody) {
  const system = b.messages.find((m) => m.role === 'system')?.content;
  if (typeof system === 'string' && system.startsWith('You review one shell command')) return { text: reviewerAnswer };
  const text = lastUser(b);
  const result = toolResult(b);
  if (result !== undefined) return { text: `tool said: ${String(result)}` };
  if (text.startsWith('run: ')) return { toolCalls: [{ id: `c${Math.random().toString(36).slice(2, 8)}`, name: 'guarded_command', arguments: JSON.stringify({ command: text.slice(5) }) }] };
  return { text: `echo: ${text}` };
}

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let gateway: RunningGateway;
const agentIds: Record<string, string> = {};
const auth = { authorization: `Bearer ${testApiKey}`, 'content-type': 'application/json' };

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url, { HERMES_PORT: 0, HERMES_HOST: '127.0.0.1', HERMES_APPROVAL_POLL_MS: 50 }));
  const base = { toolsets: ['core', 'test'] };
  for (const [name, approvals] of [
    ['demo', undefined],
    ['quick', { mode: 'manual', deny: [], allow: [], timeoutSeconds: 1 }],
    ['smart', { mode: 'smart', deny: [], allow: [], timeoutSeconds: 30 }],
  ] as const) {
    agentIds[name] = (await publishRevision(rt.db, testAgent(model.baseURL, { ...base, agent: { namespace: 'default', name }, ...(approvals ? { approvals: { ...approvals, deny: [], allow: [] } } : {}) }))).agentId;
  }
  worker = await startTestWorker(rt, { loop: { tools: builtinRegistry().register(guarded) } });
  gateway = await startGatewayOn(rt);
});

afterAll(async () => {
  await gateway?.close();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

const { post, follow, replyOf } = messageApi(() => gateway.url, auth);

describe('manual approvals through the message API', () => {
  it('parks a dangerous command, shows it on the event stream, and /approve lets it run while the turn waits', async () => {
    const turn = await post('demo', 'run: kill -9 4242');
    const stream = follow(turn);
    await stream.until('approval.pending');
    const pending = stream.events.find((e) => e.event === 'approval.pending')!.data;
    expect(pending).toMatchObject({ status: 'pending', command: 'kill -9 4242', reason: 'killing processes', message: expect.stringContaining('Reply /approve') });
    expect(await readApproval(rt.db.pool, pending.id as string)).toMatchObject({ status: 'pending' });
    const approve = await post('demo', '/approve');
    const events = await stream.done;
    expect(events.find((e) => e.event === 'reply')?.data).toMatchObject({ content: 'tool said: ALLOWED via approved by the user', outcome: 'completed' });
    expect(events.find((e) => e.event === 'approval.resolved')?.data).toMatchObject({ id: pending.id, status: 'approved' });
    expect(ran).toContain('kill -9 4242');
    const calls = model.requests.length;
    expect(await replyOf(approve)).toBe('Approved: "kill -9 4242" was allowed to run.');
    expect(model.requests.length).toBe(calls); // answered without the model
  });

  it('/deny with a reason blocks it and the model gets the reason', async () => {
    const turn = await post('demo', 'run: git push --force origin main');
    const stream = follow(turn);
    await stream.until('approval.pending');
    const deny = await post('demo', '/deny not on main please');
    const reply = (await stream.done).find((e) => e.event === 'reply')?.data.content;
    expect(reply).toMatch(/^tool said: BLOCKED: the user denied "git push --force origin main" \(git push --force\): not on main please\./);
    expect(ran).not.toContain('git push --force origin main');
    expect(await replyOf(deny)).toBe('Denied: "git push --force origin main" did not run.');
  });

  it('another user cannot approve someone else\'s command', async () => {
    const turn = await post('demo', 'run: pkill -f server', 'alice');
    const stream = follow(turn);
    await stream.until('approval.pending');
    const id = stream.events.find((e) => e.event === 'approval.pending')!.data.id as string;
    const mallory = await post('demo', '/approve', 'mallory');
    expect(await replyOf(mallory)).toBe('Nothing is waiting for your approval.');
    expect(await readApproval(rt.db.pool, id)).toMatchObject({ status: 'pending' });
    await post('demo', '/deny', 'alice');
    expect((await stream.done).find((e) => e.event === 'reply')?.data.content).toMatch(/BLOCKED: the user denied/);
    expect(ran).not.toContain('pkill -f server');
  });

  it('times out as a denial: "Silence is not consent."', async () => {
    const turn = await post('quick', 'run: rm -r build');
    const reply = await replyOf(turn);
    expect(reply).toMatch(/^tool said: BLOCKED: "rm -r build" \(recursive delete\) waited 1 s for \/approve and nobody answered\. Silence is not consent\./);
    const { rows } = await rt.db.pool.query<{ status: string }>(`SELECT status FROM command_approvals WHERE admission_id = $1`, [turn.admissionId]);
    expect(rows).toEqual([{ status: 'expired' }]);
    // A late /approve finds nothing waiting.
    expect(await replyOf(await post('quick', '/approve'))).toBe('Nothing is waiting for your approval.');
  });

  it('hardline commands are blocked without asking; safe commands run without asking', async () => {
    expect(await replyOf(await post('demo', 'run: sudo  rm -rf "/"'))).toMatch(/^tool said: BLOCKED: .*hardline blocklist/);
    expect(await replyOf(await post('demo', 'run: ls -la'))).toBe('tool said: ALLOWED via not dangerous');
  });

  it('counts every decision by outcome in Prometheus', async () => {
    const text = await rt.metrics.registry.metrics();
    for (const outcome of ['approved', 'denied', 'expired', 'hardline', 'not_dangerous']) {
      expect(text).toMatch(new RegExp(`hermes_command_approvals_total\\{[^}]*outcome="${outcome}"[^}]*\\} [1-9]`));
    }
  });
});

describe('smart approvals', () => {
  it('asks the agent\'s model as a reviewer (recorded as task approval); DENY blocks, APPROVE runs', async () => {
    reviewerAnswer = 'APPROVE\nbuild output';
    expect(await replyOf(await post('smart', 'run: rm -r dist'))).toBe('tool said: ALLOWED via smart approval');
    reviewerAnswer = 'DENY\ndeletes the data folder';
    expect(await replyOf(await post('smart', 'run: rm -r data'))).toMatch(/^tool said: BLOCKED: the security reviewer denied "rm -r data" \(recursive delete\): deletes the data folder/);
    const { rows } = await rt.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM model_call_usage WHERE agent_id = $1 AND task = 'approval'`, [agentIds.smart]);
    expect(Number(rows[0]!.n)).toBe(2);
  });
});

describe('unattended and interrupted turns', () => {
  it('a cron turn denies what would need a human', async () => {
    const { reply } = await runTurn(rt, { agentId: agentIds.demo!, sessionKey: 'agent:default/demo:cron:job1', content: 'run: kill -9 4243', platform: 'cron' });
    expect(reply).toMatch(/^tool said: BLOCKED: .*nobody watches this turn/);
  });

  it('a worker that dies while a command waits: the approval stays pending, never approved; a late /approve says nothing ran', async () => {
    const key = 'agent:default/demo:api:dm:restart';
    const a = await admit(rt.db, { agentId: agentIds.demo!, platform: 'api', sessionKey: key, user: { platformUserId: 'u1' }, content: 'run: kill -9 77', replyTarget: { kind: 'api' } });
    const ghost = await registerInstance(rt.db.pool, 'worker');
    const lease = (await acquireLease(rt.db.pool, a.sessionId, ghost.id, 300, { instanceTtlSeconds: 3, steady: true }))!;
    expect((await startNextTurn(rt.db, lease))?.id).toBe(a.admissionId);
    const parked = await parkApproval(rt.db.pool, { admissionId: a.admissionId, command: 'kill -9 77', reason: 'killing processes', timeoutSeconds: 300 });
    await markStopped(rt.db.pool, ghost.id); // the waiting worker died; the running worker's sweeper settles its turn
    await eventually(async () => (await getAdmission(rt.db.pool, a.admissionId))?.state === 'unknown', 'the dead turn unknown');
    expect(await readApproval(rt.db.pool, parked.id)).toMatchObject({ status: 'pending', consumed: false });
    // The late /approve, admitted as the gateway does (decision recorded at admission), then answered by the worker.
    const late = await fetchApproveFor(key);
    expect(late.reply).toBe('Too late: the turn that asked to run "kill -9 77" no longer waits (it was interrupted), so nothing ran. Send /retry to run that request again.');
    expect(await readApproval(rt.db.pool, parked.id)).toMatchObject({ status: 'abandoned', consumed: false });
    expect(ran).not.toContain('kill -9 77');
  });
});

/** `/approve` in session `key`, with the gateway's decision step, run by the worker: its reply. */
async function fetchApproveFor(key: string): Promise<{ reply: string }> {
  const adm = await admit(rt.db, { agentId: agentIds.demo!, platform: 'api', sessionKey: key, user: { platformUserId: 'u1' }, content: '/approve', replyTarget: { kind: 'api' } });
  expect(await decideApproval(rt.db.pool, { decidingAdmissionId: adm.admissionId, decision: 'approved' })).toBeDefined();
  await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
  const reply = await eventually(async () => {
    const { rows } = await rt.db.pool.query<{ content: string }>(`SELECT o.content FROM delivery_obligations o WHERE o.admission_id = $1`, [adm.admissionId]);
    return rows[0]?.content;
  }, 'the /approve reply');
  return { reply };
}
