// clarify end to end through the message API (issue 14 point 4): the fake model calls clarify;
// the question is parked in Postgres and recorded as a delivery obligation of the turn; the user's
// next plain message in the session is the answer (the turn gets it as the tool result, the
// answering message is answered silently, without the model). Also: the timeout and /stop end the
// wait with a clear result, a late message after the timeout is an ordinary message, cron turns
// are never offered clarify — and a worker that shuts down while the question waits hands the
// turn over: another worker resumes the wait and the answer still reaches the model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAdmission, getObligationForAdmission, isSilentReply, publishRevision } from '../../services/core/index.js';
import { startGatewayOn } from '../../services/cli/gateway.js';
import type { RunningGateway } from '../../services/gateway/index.js';
import type { RunningWorker } from '../../services/worker/index.js';
import { RESUME_NOTE } from '../../services/worker/turn-context.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../support/services.js';
import { startFakeOpenAI, lastUser, type ChatRequestBody, type FakeOpenAI } from '../support/fake-openai.js';
import { openTestRuntime, runTurn, startTestWorker, testAgent, testApiKey, type TestRuntime } from '../support/system.js';
import { messageApi, type Posted } from '../support/message-api.js';

/** The tool result answering this turn's request (after the last user message), if any. */
const toolResult = (b: ChatRequestBody) => {
  const lastUserAt = b.messages.map((m) => m.role).lastIndexOf('user');
  return b.messages.slice(lastUserAt).find((m) => m.role === 'tool')?.content;
};
function script(b: ChatRequestBody) {
  const text = lastUser(b);
  if (text === RESUME_NOTE) return { text: `resumed with: ${b.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? 'nothing'}` };
  const result = toolResult(b);
  if (result !== undefined) return { text: `got: ${result}` };
  if (text.startsWith('ask: ')) return { toolCalls: [{ id: `c${Math.random().toString(36).slice(2, 8)}`, name: 'clarify', arguments: JSON.stringify({ question: text.slice(5), choices: ['staging', 'production'] }) }] };
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
  // A short grace period: the restart test's shutdown cuts the waiting turn after 1 s.
  rt = await openTestRuntime(testConfig(database.url, { HERMES_PORT: 0, HERMES_HOST: '127.0.0.1', HERMES_APPROVAL_POLL_MS: 50, HERMES_SHUTDOWN_GRACE_SECONDS: 1 }));
  for (const [name, clarify] of [['demo', undefined], ['quick', { timeoutSeconds: 1 }]] as const) {
    agentIds[name] = (await publishRevision(rt.db, testAgent(model.baseURL, { agent: { namespace: 'default', name }, toolsets: ['clock', 'clarify'], ...(clarify ? { clarify } : {}) }))).agentId;
  }
  worker = await startTestWorker(rt);
  gateway = await startGatewayOn(rt);
});

afterAll(async () => {
  await gateway?.close();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

const { post, replyOf } = messageApi(() => gateway.url, auth);

interface Row { id: string; status: string; admission_id: string; answer: string | null; consumed_at: Date | null }
/** The clarify question of the session `p` was admitted in, once one exists. */
const questionOf = (p: Posted) => eventually(async () => {
  const { rows } = await rt.db.pool.query<Row>(`SELECT id, status, admission_id, answer, consumed_at FROM clarifications WHERE session_id = $1 ORDER BY created_at DESC LIMIT 1`, [p.sessionId]);
  return rows[0];
}, 'the parked question');
const rowOf = async (id: string) => (await rt.db.pool.query<Row>(`SELECT id, status, admission_id, answer, consumed_at FROM clarifications WHERE id = $1`, [id])).rows[0]!;
const toolNames = (b: ChatRequestBody) => (b.tools ?? []).map((t) => t.function.name);

describe('clarify', () => {
  it('asks, delivers the question through the delivery ledger, and the user\'s next message is the answer', async () => {
    const turn = await post('demo', 'ask: Deploy to which environment?', 'alice');
    const q = await questionOf(turn);
    expect(q).toMatchObject({ status: 'pending', admission_id: turn.admissionId });
    const { rows: [ob] } = await rt.db.pool.query<{ call_key: string; content: string; platform: string }>(`SELECT call_key, content, platform FROM delivery_obligations WHERE admission_id = $1 AND call_key <> ''`, [turn.admissionId]);
    expect(ob).toEqual({ call_key: `clarify:${q.id}`, platform: 'api', content: '❓ Deploy to which environment?\n1. staging\n2. production\n\nReply with a number or in your own words.' });
    const calls = model.requests.length;
    const answer = await post('demo', 'production, please', 'alice');
    expect(await replyOf(turn)).toBe('got: {"question":"Deploy to which environment?","choices_offered":["staging","production"],"user_response":"production, please"}');
    expect(await rowOf(q.id)).toMatchObject({ status: 'answered', answer: 'production, please', consumed_at: expect.any(Date) });
    // The answering message is answered by the waiting turn: it ends silently, without the model.
    expect(isSilentReply(await replyOf(answer))).toBe(true);
    expect(model.requests.length).toBe(calls + 1);
  });

  it('a message-API caller sees the question: on the admission and on its event stream (live and joining late), then its end', async () => {
    // The question was only a delivery obligation ("read as delivered"), which the message API never
    // shows: the caller saw state "started", reply null and no event until the wait timed out.
    const { follow } = messageApi(() => gateway.url, auth);
    const turn = await post('demo', 'ask: Which database?', 'erin');
    const live = follow(turn);
    await live.until('clarify.pending');
    const q = await questionOf(turn);
    const message = '❓ Which database?\n1. staging\n2. production\n\nReply with a number or in your own words.';
    const pending = { id: q.id, status: 'pending', question: 'Which database?', choices: ['staging', 'production'], expiresAt: expect.any(String), message };
    expect(live.events.find((e) => e.event === 'clarify.pending')?.data).toEqual(pending);
    const view = async () => (await (await fetch(`${gateway.url}${turn.links.self}`, { headers: auth })).json()) as { state: string; clarify: unknown };
    expect(await view()).toMatchObject({ state: 'started', clarify: pending });
    const late = follow(turn);
    await late.until('clarify.pending');
    await post('demo', 'staging', 'erin');
    const events = await live.done;
    expect(events.find((e) => e.event === 'clarify.resolved')?.data).toMatchObject({ id: q.id, status: 'answered' });
    expect(events.at(-1)).toMatchObject({ event: 'reply', data: { content: 'got: {"question":"Which database?","choices_offered":["staging","production"],"user_response":"staging"}' } });
    await late.done;
    expect(await view()).toMatchObject({ state: 'terminal', clarify: null });
  });

  it('a timeout ends the wait with a clear result, and a late message is ordinary', async () => {
    const turn = await post('quick', 'ask: Which region?', 'bob');
    const q = await questionOf(turn);
    const reply = await replyOf(turn);
    expect(reply).toMatch(/^got: \{"question":"Which region\?","choices_offered":\["staging","production"\],"status":"timeout","user_response":null,"note":"The user did not answer within 1 s\./);
    expect(await rowOf(q.id)).toMatchObject({ status: 'expired', answer: null });
    expect(await replyOf(await post('quick', 'eu-west', 'bob'))).toBe('echo: eu-west');
  });

  it('/stop ends the wait: the question is cancelled and the turn stops', async () => {
    const turn = await post('demo', 'ask: Shall I go on?', 'carol');
    const q = await questionOf(turn);
    const stop = await post('demo', '/stop', 'carol');
    await eventually(async () => (await getAdmission(rt.db.pool, turn.admissionId))?.outcome === 'interrupted', 'the stopped turn');
    // The stopped tool's own handler cancels its question, alongside the turn's end.
    await eventually(async () => (await rowOf(q.id)).status !== 'pending' || undefined, 'the question closed');
    expect(await rowOf(q.id)).toMatchObject({ status: 'cancelled', answer: null });
    expect(await replyOf(stop)).toBe('Stopping the running turn.');
  });

  it('unattended (cron) turns are never offered clarify; chat turns are', async () => {
    const { reply } = await runTurn(rt, { agentId: agentIds.demo!, sessionKey: 'agent:default/demo:cron:job1', content: 'ask: Anyone there?', platform: 'cron' });
    const cronCall = model.requests.find((r) => lastUser(r.body) === 'ask: Anyone there?')!;
    expect(toolNames(cronCall.body)).not.toContain('clarify');
    expect(reply).toMatch(/Unknown tool: clarify/);
    const chatCall = model.requests.find((r) => lastUser(r.body) === 'ask: Deploy to which environment?')!;
    expect(toolNames(chatCall.body)).toContain('clarify');
  });

  it('a chat completion without X-Hermes-Session-Id is not offered clarify, even with one message: no next request can answer it', async () => {
    // It was: the model asked, and the turn waited an hour in a conversation (chat-<uuid>) that no
    // request can reach again, holding the caller's request. Now the call is refused at once.
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST', headers: auth, body: JSON.stringify({ model: 'default/demo', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'ask: Which data centre?' }] }),
    });
    expect(res.status).toBe(200);
    const body = await res.json() as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content).toMatch(/^got: .*Unknown tool: clarify/);
    const call = model.requests.find((r) => lastUser(r.body) === 'ask: Which data centre?')!;
    expect(toolNames(call.body)).not.toContain('clarify');
  });

  it('a chat completion in a named session (X-Hermes-Session-Id) is not offered clarify either: its caller sees only the reply', async () => {
    // It was: the question was asked, the request hung waiting for a turn that waited for an
    // answer its caller could not see.
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST', headers: { ...auth, 'x-hermes-session-id': 'named-clarify' }, body: JSON.stringify({ model: 'default/demo', messages: [{ role: 'user', content: 'ask: Which rack?' }] }),
      signal: AbortSignal.timeout(20_000),
    });
    expect(res.status).toBe(200);
    const body = await res.json() as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content).toMatch(/^got: .*Unknown tool: clarify/);
    const call = model.requests.find((r) => lastUser(r.body) === 'ask: Which rack?')!;
    expect(toolNames(call.body)).not.toContain('clarify');
  });

  it('clarify across a worker restart: the shutdown hands the waiting turn over, another worker resumes the wait and gets the answer', async () => {
    const turn = await post('demo', 'ask: Roll back the release?', 'dave');
    const q = await questionOf(turn);
    await worker.close(); // the grace period (1 s) passes with the question unanswered: the turn is cut
    const cut = (await getAdmission(rt.db.pool, turn.admissionId))!;
    expect(cut).toMatchObject({ state: 'terminal', outcome: 'interrupted' });
    expect(await rowOf(q.id)).toMatchObject({ status: 'pending' }); // a shutdown never cancels the question
    worker = await startTestWorker(rt);
    const resumeId = await eventually(async () => {
      const { rows } = await rt.db.pool.query<{ id: string }>(`SELECT id FROM admissions WHERE resume_of = $1 AND state = 'started'`, [turn.admissionId]);
      return rows[0]?.id;
    }, 'the resumed turn running');
    await eventually(async () => (await rowOf(q.id)).admission_id === resumeId || undefined, 'the question taken over by the resumed turn');
    const answer = await post('demo', 'yes, roll back', 'dave');
    const reply = await eventually(async () => (await getObligationForAdmission(rt.db.pool, resumeId))?.content, 'the resumed turn\'s reply');
    expect(reply).toBe('resumed with: {"question":"Roll back the release?","choices_offered":["staging","production"],"user_response":"yes, roll back"}');
    expect(isSilentReply(await replyOf(answer))).toBe(true);
    // Asked once: one question obligation for the whole wait.
    const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM delivery_obligations WHERE session_id = $1 AND call_key LIKE 'clarify:%'`, [turn.sessionId]);
    expect(rows[0]!.n).toBe(1);
  });
});
