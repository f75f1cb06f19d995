// Slash commands, the busy policy, the emergency stop and max concurrent sessions, through the real
// gateway app (message API), the real worker, Postgres and Redis; the fake model holds a turn
// open (its request stalls until the test lets it go) so commands arrive while a turn runs.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import {
  acquireLease, admit, agentStopped, enqueueTurn, getAdmission, getObligationForAdmission, listTranscript, markStopped, publishRevision, registerInstance, startNextTurn,
  SILENT_REPLY, stoppedReply, unknownNotice, type CompiledAgent,
} from '../../../services/core/index.js';
import { builtinRegistry, defineTool, pgLearnedSkills } from '../../../services/agent/index.js';
import { buildGatewayApp } from '../../../services/gateway/index.js';
import { sessionQueueFullReply } from '../../../services/gateway/inbound.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { resetStoppedReply } from '../../../services/worker/turn-runner.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type ChatRequestBody, type FakeOpenAI, type Script } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, testAgent, testApiKey, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let app: FastifyInstance;

/** Turns whose model request waits for the test: "hold <id>" answers "done <id>" once released. */
const holds = new Map<string, { promise: Promise<void>; release: () => void }>();
function hold(id: string) {
  let release!: () => void;
  const promise = new Promise<void>((r) => { release = r; });
  holds.set(id, { promise, release });
  return holds.get(id)!;
}

// A tool that runs until the test lets it go.
let toolStarted!: () => void;
const toolRunning = new Promise<void>((r) => { toolStarted = r; });
let releaseTool!: () => void;
const gate = defineTool({
  name: 'wait_for_go', description: 'Waits.', toolset: 'test', sideEffect: 'writes', schema: z.object({}).strict(),
  handler: () => new Promise<string>((resolve) => { releaseTool = () => resolve('went'); toolStarted(); }),
});

const userLines = (b: ChatRequestBody) => b.messages.filter((m) => m.role === 'user').map((m) => m.content);
function script(b: ChatRequestBody): Script {
  const user = lastUser(b);
  const held = /^hold (\S+)$/.exec(user);
  if (held && b.messages.at(-1)!.role === 'user') return { hold: holds.get(held[1]!)?.promise ?? Promise.resolve(), text: `done ${held[1]!}` };
  if (user === 'use the tool' && b.messages.at(-1)!.role === 'user') return { toolCalls: [{ id: 'w1', name: 'wait_for_go', arguments: '{}' }] };
  return { text: `saw: ${userLines(b).join(' | ')}` };
}

const agentNamed = (name: string, overrides: Partial<CompiledAgent> = {}): Partial<CompiledAgent> => ({ agent: { namespace: 'default', name }, ...overrides });
const ids: Record<string, string> = {};

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url, { HERMES_MAX_QUEUED_PER_SESSION: 3 }));
  ids.demo = await createTestAgent(rt, model.baseURL, { fallbackModels: [{ ...testAgent(model.baseURL).model, provider: 'openai', model: 'gpt-backup' }] });
  ids.interrupt = await createTestAgent(rt, model.baseURL, agentNamed('interrupter', { busyPolicy: 'interrupt' }));
  ids.steer = await createTestAgent(rt, model.baseURL, agentNamed('steerer', { busyPolicy: 'steer', toolsets: ['test'] }));
  ids.stopper = await createTestAgent(rt, model.baseURL, agentNamed('stopper'));
  ids.capped = await createTestAgent(rt, model.baseURL, agentNamed('capped', { maxConcurrentSessions: 1 }));
  // Created with the others, before the gateway starts: the gateway's agent cache has it from the first request.
  const m = { ...testAgent(model.baseURL).model, provider: 'openai' as const };
  const moa = { defaultPreset: 'p', presets: [{ name: 'p', referenceModels: [m], aggregator: m, referenceTemperature: 0.6, aggregatorTemperature: 0.4, maxTokens: 512, fanout: 'user_turn' as const }] };
  ids.moa = await createTestAgent(rt, model.baseURL, agentNamed('moa-cmd', { moa }));
  ids.learner = await createTestAgent(rt, model.baseURL, agentNamed('learner', { skills: [{ name: 'learn', object: 'learn' }] }));
  ids.narrow = await createTestAgent(rt, model.baseURL, agentNamed('narrow', { access: { default: { commands: ['new'] }, groups: [], users: [] } }));
  worker = await startTestWorker(rt, { loop: { tools: builtinRegistry().register(gate) } });
  app = buildGatewayApp({ ...rt, tuning: { pollMs: 50 } });
  await app.ready();
});
afterAll(async () => {
  for (const h of holds.values()) h.release();
  releaseTool?.();
  await app?.close();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

interface Posted { admissionId: string; sessionId: string; state: string }
async function post(content: string, conversation: string, agent = 'demo'): Promise<Posted> {
  const res = await app.inject({ method: 'POST', url: `/v1/agents/default/${agent}/messages`, headers: { authorization: `Bearer ${testApiKey}` }, payload: { content, conversation } });
  expect(res.statusCode).toBe(202);
  return res.json();
}
async function finished(admissionId: string) {
  const a = await eventually(async () => {
    const row = await getAdmission(rt.db.pool, admissionId);
    return row?.state === 'terminal' ? row : undefined;
  }, `admission ${admissionId} terminal`);
  const reply = await eventually(async () => (await getObligationForAdmission(rt.db.pool, admissionId))?.content, 'obligation');
  return { a, reply };
}
/** The reply of a command answered at admission: already there when the POST returns. */
async function answeredNow(p: Posted): Promise<string> {
  expect(p.state).toBe('terminal');
  const ob = await getObligationForAdmission(rt.db.pool, p.admissionId);
  expect(ob).toBeDefined();
  return ob!.content;
}
const requestsFor = (text: string) => model.requests.filter((r) => lastUser(r.body) === text);
const inFlight = (text: string) => eventually(() => model.inFlight().find((r) => lastUser(r.body) === text), `model request "${text}" in flight`);

describe('commands while a turn runs', () => {
  it('answers /status, /usage, /help, /whoami and /model at once, without the model, while a message waits', async () => {
    const h = hold('c1');
    const turn = await post('hold c1', 'cmd');
    await inFlight('hold c1');
    const queued = await post('and after that?', 'cmd');
    const calls = model.requests.length;

    const status = await answeredNow(await post('/status', 'cmd'));
    expect(status).toContain(`Conversation ${turn.sessionId}.`);
    expect(status).toContain('A turn is running');
    expect(status).toContain('1 message queued.');
    expect(status).toContain('Model: openai/gpt-test (+1 fallback). Busy policy: queue.');
    expect(await answeredNow(await post('/usage', 'cmd'))).toMatch(/^Usage in this conversation: \d+ model call\(s\)\./);
    const help = await answeredNow(await post('/help', 'cmd'));
    for (const line of ['/new — ', '/queue <message> (or /q) — ', '/retry — ', '/discard — ', '/status — ', '/redirect <message> — ', '/memory [', '/skills [', '/curator [']) expect(help).toContain(line);
    expect(await answeredNow(await post('/redirect', 'cmd'))).toBe('/redirect needs a message: /redirect <your message>.');
    const who = await answeredNow(await post('/whoami', 'cmd'));
    expect(who).toMatch(/^You are api:k:\S+\./);
    expect(who).toContain('not an admin');
    expect(await answeredNow(await post('/model', 'cmd'))).toBe('Model: openai/gpt-test.\nFallbacks, in order: openai/gpt-backup.');
    expect(await answeredNow(await post('/model gpt-backup', 'cmd'))).toContain('Switching the model from a chat is not supported');

    expect(model.requests.length).toBe(calls); // none of them called the model
    expect((await getAdmission(rt.db.pool, turn.admissionId))?.state).toBe('started'); // and the turn still runs
    h.release();
    expect((await finished(turn.admissionId)).reply).toBe('done c1');
    expect((await finished(queued.admissionId)).reply).toBe('saw: hold c1 | and after that?'); // busy policy queue: runs next
    // Commands answered at admission are not conversation: the transcript has none of them.
    expect((await listTranscript(rt.db.pool, turn.sessionId)).map((m) => m.content)).toEqual(['hold c1', 'done c1', 'and after that?', 'saw: hold c1 | and after that?']);
  });

  it('/new and /reset start a fresh session for the same key, stop the running turn and keep the old transcript', async () => {
    const first = await post('remember: blue', 'fresh');
    await finished(first.admissionId);
    hold('n1'); // never released: /new stops it
    const turn = await post('hold n1', 'fresh');
    await inFlight('hold n1');
    const fresh = await post('/new', 'fresh');
    expect(await answeredNow(fresh)).toBe('Started a new conversation; the previous one is kept. Its running turn was stopped.');
    const { a, reply } = await finished(turn.admissionId);
    expect(a.outcome).toBe('interrupted');
    // Not "send /retry": a /retry now reaches the new session, which has nothing of this turn.
    expect(reply).toBe(resetStoppedReply('/new'));
    expect((await finished((await post('/retry', 'fresh')).admissionId)).reply).toBe('Nothing to retry yet.');
    const next = await post('what do you remember?', 'fresh');
    expect(next.sessionId).not.toBe(first.sessionId);
    expect((await finished(next.admissionId)).reply).toBe('saw: what do you remember?');
    expect((await listTranscript(rt.db.pool, first.sessionId)).map((m) => m.content)).toContain('remember: blue');
    const reset = await post('/reset', 'fresh');
    expect(await answeredNow(reset)).toBe('Started a new conversation; the previous one is kept.');
    const after = await post('and now?', 'fresh');
    expect(after.sessionId).not.toBe(next.sessionId);
    await finished(after.admissionId); // its model call is not left to land in a later test's count
  });

  it('/new ends the old session and drops the messages queued in it: none of them runs in the conversation the user left', async () => {
    hold('n2'); // never released: /new stops it
    const turn = await post('hold n2', 'dropped');
    await inFlight('hold n2');
    const waiting = await post('queued behind', 'dropped');
    expect(waiting.state).toBe('queued');
    expect(await answeredNow(await post('/new', 'dropped'))).toBe('Started a new conversation; the previous one is kept. Its running turn was stopped. The message waiting in it was dropped.');
    expect((await finished(turn.admissionId)).a.outcome).toBe('interrupted');
    expect(await getAdmission(rt.db.pool, waiting.admissionId)).toMatchObject({ state: 'terminal', outcome: 'discarded' });
    const { rows: [old] } = await rt.db.pool.query(`SELECT state FROM sessions WHERE id = $1`, [turn.sessionId]);
    expect(old).toEqual({ state: 'ended' }); // a worker drain marks only `active` sessions resume_pending
    const next = await post('hello again', 'dropped');
    expect((await finished(next.admissionId)).reply).toBe('saw: hello again');
    expect(requestsFor('queued behind')).toHaveLength(0);
  });

  it('several /new sent at once are each answered, one after another: each ends the conversation the one before it started', async () => {
    const first = await post('before the burst', 'burst');
    await finished(first.admissionId);
    const news = await Promise.all(Array.from({ length: 6 }, () => post('/new', 'burst')));
    for (const n of news) expect(await answeredNow(n)).toBe('Started a new conversation; the previous one is kept.');
    // Each /new was admitted into the session the previous one made: a chain, not six answers to one session.
    expect(new Set(news.map((n) => n.sessionId)).size).toBe(6);
    const { rows } = await rt.db.pool.query(`SELECT count(*)::int AS n FROM sessions WHERE session_key = (SELECT session_key FROM sessions WHERE id = $1) AND state = 'ended'`, [first.sessionId]);
    expect(rows[0].n).toBe(6);
  });

  it('a conversation holds at most HERMES_MAX_QUEUED_PER_SESSION waiting messages: one more is answered, kept and never run; a /steer still gets through', async () => {
    const h = hold('f1');
    const turn = await post('hold f1', 'full');
    await inFlight('hold f1');
    const waiting: Posted[] = [];
    for (let i = 0; i < 3; i++) waiting.push(await post(`wait ${i}`, 'full'));
    for (const w of waiting) expect(w.state).toBe('queued');
    // The message API answers 429 at once; the message stays in the ledger, answered with the words a chat user gets in the chat.
    const over = await app.inject({ method: 'POST', url: '/v1/agents/default/demo/messages', headers: { authorization: `Bearer ${testApiKey}` }, payload: { content: 'one too many', conversation: 'full' } });
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toMatchObject({ code: 'HERMES_CONVERSATION_FULL', message: 'This message was not queued: its conversation is full. 3 messages are already waiting for their turn in it (HERMES_MAX_QUEUED_PER_SESSION). Wait for their answers, or send /new to start over (it drops the waiting ones).' });
    expect(sessionQueueFullReply('api', 3)).toBe('3 messages are already waiting for their turn in this conversation, so this one was not queued. Wait for their answers and send it again, or send /new to start over (it drops the waiting ones).');
    expect(sessionQueueFullReply('slack', 3)).toContain('send !new to start over');
    const { rows: kept } = await rt.db.pool.query(`SELECT a.state, a.outcome, o.content FROM admissions a JOIN delivery_obligations o ON o.admission_id = a.id WHERE a.session_id = $1 AND a.content = 'one too many'`, [turn.sessionId]);
    expect(kept).toEqual([{ state: 'terminal', outcome: 'discarded', content: sessionQueueFullReply('api', 3) }]);
    // /queue queues a message: bounded too.
    const queueToo = await app.inject({ method: 'POST', url: '/v1/agents/default/demo/messages', headers: { authorization: `Bearer ${testApiKey}` }, payload: { content: '/queue me too', conversation: 'full' } });
    expect(queueToo.statusCode).toBe(429);
    const steer = await post('/steer and be quick', 'full');
    expect(steer.state).toBe('queued'); // a control of the running turn always gets through (SPEC)
    expect((await post('and another', 'other-full')).state).toBe('queued'); // the bound is per conversation
    h.release();
    expect((await finished(turn.admissionId)).a.outcome).toBe('completed');
    for (const w of waiting) expect((await finished(w.admissionId)).a.outcome).toBe('completed');
    await finished(steer.admissionId);
    expect(requestsFor('one too many')).toHaveLength(0);
    expect(model.requests.some((r) => userLines(r.body).includes('one too many'))).toBe(false);
    expect((await finished((await post('room again', 'full')).admissionId)).reply).toContain('room again'); // the queue drained: messages wait again
  });

  it('/queue runs its message after the running turn even under busy policy interrupt', async () => {
    const h = hold('q1');
    const turn = await post('hold q1', 'queue', 'interrupter');
    await inFlight('hold q1');
    const queued = await post('/queue later please', 'queue', 'interrupter');
    expect(queued.state).toBe('queued');
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM session_signals WHERE admission_id = $1`, [queued.admissionId]);
    expect(rows).toHaveLength(0); // no interrupt
    h.release();
    expect((await finished(turn.admissionId))).toMatchObject({ a: { outcome: 'completed' }, reply: 'done q1' });
    expect((await finished(queued.admissionId)).reply).toBe('saw: hold q1 | later please');
    expect(requestsFor('/queue later please')).toHaveLength(0); // the model got the message, not the command
    expect(await answeredNow(await post('/queue', 'queue', 'interrupter'))).toBe('/queue needs a message: /queue <your message>.');
    // Hermes' alias /q is /queue: it queues too, never interrupting.
    const h2 = hold('q2');
    const turn2 = await post('hold q2', 'queue', 'interrupter');
    await inFlight('hold q2');
    const viaAlias = await post('/q and then this', 'queue', 'interrupter');
    expect(viaAlias.state).toBe('queued');
    h2.release();
    expect((await finished(turn2.admissionId)).a.outcome).toBe('completed');
    expect((await finished(viaAlias.admissionId)).reply).toContain('and then this');
    expect(requestsFor('/q and then this')).toHaveLength(0);
  });

  it('/steer and /redirect with no turn running run as a turn whose request is their text, never the command word', async () => {
    expect((await finished((await post('/steer use the red one', 'steer-idle')).admissionId)).reply).toBe('saw: use the red one');
    expect((await finished((await post('/redirect go left', 'steer-idle')).admissionId)).reply).toBe('saw: use the red one | go left');
    expect(JSON.stringify(model.requests.map((r) => r.body.messages))).not.toMatch(/\/steer use|\/redirect go/);
  });

  it('/moa is answered at once without a preset or without a prompt (no turn, no model call)', async () => {
    const before = model.requests.length;
    expect(await answeredNow(await post('/moa plan it', 'moa', 'demo'))).toBe('This agent has no Mixture-of-Agents preset: an operator can add one to its Profile (spec.moa.presets).');
    expect(await answeredNow(await post('/moa', 'moa', 'moa-cmd'))).toBe('/moa needs a message: /moa <your message>.');
    expect(model.requests.length).toBe(before);
  });

  it('Hermes commands this runtime lacks (/undo, /title x, /sessions, /background x, …) are answered at once without the model; /start silently', async () => {
    const calls = model.requests.length;
    expect(await answeredNow(await post('/undo', 'lacks'))).toBe('/undo is not available here: a conversation cannot be backed up. /retry answers your last message afresh (the earlier answer leaves the conversation). /new starts over.');
    expect(await answeredNow(await post('/title my project', 'lacks'))).toBe('/title is not available here: conversations have no titles. /status shows this conversation\'s id.');
    expect(await answeredNow(await post('/sessions', 'lacks'))).toContain('/sessions is not available here: a chat has one conversation at a time');
    expect(await answeredNow(await post('/BACKGROUND write the report', 'lacks'))).toContain('/background is not available here. /queue <message> runs');
    expect(await answeredNow(await post('/yolo', 'lacks'))).toContain('/yolo is not available here: this agent\'s settings are its operator\'s');
    expect(await answeredNow(await post('/history', 'lacks'))).toBe('/history is a command of Hermes\' terminal UI; there is no terminal here.');
    const start = await post('/start', 'lacks');
    expect(await answeredNow(start)).toBe(SILENT_REPLY); // stored, never sent (Hermes acknowledges start pings without a reply)
    expect(model.requests.length).toBe(calls);
    // None of it is conversation: the next message's model request holds only itself.
    expect((await finished((await post('and now?', 'lacks')).admissionId)).reply).toBe('saw: and now?');
    // A skill the agent offers under such a name is that skill's command, not refused here.
    const learn = await post('/learn this', 'lacks', 'learner');
    expect(learn.state).toBe('queued');
    await finished(learn.admissionId);
  });

  it('a skill the agent learned under the name of a Hermes command this runtime lacks is that skill\'s command (Hermes: every installed skill is a /<skill-name> command)', async () => {
    expect(await answeredNow(await post('/debug', 'learned'))).toContain('/debug is not available here');
    const learned = await pgLearnedSkills(rt.db).change(ids.demo!, 'debug', null, () => ({ name: 'debug', description: 'Debug a failing service.', body: 'Ask for the logs.', tags: [], relatedSkills: [], requiredEnvironmentVariables: [], files: [] }));
    expect(learned.ok).toBe(true);
    const debug = await post('/debug my service is down', 'learned');
    expect(debug.state).toBe('queued');
    await finished(debug.admissionId);
  });

  it('the answer to a Hermes command this runtime lacks points only at commands the sender may use', async () => {
    const lacks = async (content: string) => answeredNow(await post(content, 'only-new', 'narrow'));
    expect(await lacks('/undo')).toBe('/undo is not available here: a conversation cannot be backed up. /new starts over.');
    expect(await lacks('/title x')).toBe('/title is not available here: conversations have no titles.');
    expect(await lacks('/yolo')).toBe('/yolo is not available here: this agent\'s settings are its operator\'s (the Agent and Profile manifests), never changed from a chat.');
  });

  it('/approve, /deny, /retry and /discard wait for the running turn: they act on the session as its next turns', async () => {
    const h = hold('a1');
    const turn = await post('hold a1', 'approve');
    await inFlight('hold a1');
    const approve = await post('/approve', 'approve');
    const deny = await post('/deny not now', 'approve');
    const discard = await post('/discard', 'approve');
    for (const p of [approve, deny, discard]) expect(p.state).toBe('queued');
    h.release();
    await finished(turn.admissionId);
    expect((await finished(approve.admissionId)).reply).toBe('Nothing is waiting for your approval.');
    expect((await finished(deny.admissionId)).reply).toBe('Nothing is waiting for your approval, so there is nothing to deny.');
    expect((await finished(discard.admissionId)).reply).toBe('Nothing to discard: no interrupted turn is waiting.');
  });
});

describe('busy policy', () => {
  it('interrupt: a new message stops the running turn (which ends silently) and runs next with both lines', async () => {
    hold('i1'); // never released: the new message interrupts it
    const turn = await post('hold i1', 'int', 'interrupter');
    const req = await inFlight('hold i1');
    const next = await post('actually, do this', 'int', 'interrupter');
    const { a, reply } = await finished(turn.admissionId);
    expect(a.outcome).toBe('interrupted');
    expect(reply).toBe('[SILENT]'); // nothing said yet: stored, not sent
    await eventually(() => req.aborted || undefined, 'the model saw the request cut');
    expect((await finished(next.admissionId)).reply).toBe('saw: hold i1 | actually, do this');
    // The runtime's '[SILENT]' is not the model's words: the next request has no assistant line for the cut turn.
    expect(requestsFor('actually, do this').at(-1)!.body.messages.filter((m) => m.role !== 'system').map((m) => [m.role, m.content])).toEqual([['user', 'hold i1'], ['user', 'actually, do this']]);
  });

  it('interrupt: /memory, /skills and /curator are commands, not news — they wait for the running turn instead of stopping it', async () => {
    const h = hold('i2');
    const turn = await post('hold i2', 'int-cmd', 'interrupter');
    await inFlight('hold i2');
    const commands = [await post('/memory pending', 'int-cmd', 'interrupter'), await post('/skills', 'int-cmd', 'interrupter'), await post('/curator status', 'int-cmd', 'interrupter')];
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM session_signals WHERE admission_id = ANY($1::uuid[])`, [commands.map((c) => c.admissionId)]);
    expect(rows).toHaveLength(0); // no interrupt
    h.release();
    expect(await finished(turn.admissionId)).toMatchObject({ a: { outcome: 'completed' }, reply: 'done i2' });
    for (const c of commands) expect((await finished(c.admissionId)).reply).toMatch(/^Only this agent's admins may /); // answered by the command, not the model
  });

  it('steer: a new message reaches the running turn after its tool batch and is answered by it', async () => {
    const turn = await post('use the tool', 'steer', 'steerer');
    await toolRunning;
    const steer = await post('make it blue', 'steer', 'steerer');
    await eventually(async () => {
      const { rows } = await rt.db.pool.query(`SELECT 1 FROM session_signals WHERE admission_id = $1 AND consumed_by = $2`, [steer.admissionId, turn.admissionId]);
      return rows.length ? true : undefined;
    }, 'steer taken by the running turn');
    const before = model.requests.length;
    releaseTool();
    expect((await finished(turn.admissionId)).reply).toBe('saw: use the tool | make it blue');
    const settled = await finished(steer.admissionId);
    expect(settled).toMatchObject({ a: { outcome: 'completed' }, reply: '[SILENT]' });
    expect(model.requests.length).toBe(before + 1); // only the turn's own call after the tool
  });

  it('steer: a message the running turn never showed the model (it answered without another tool batch) runs as its own turn', async () => {
    const h = hold('s2');
    const turn = await post('hold s2', 'steer2', 'steerer');
    await inFlight('hold s2');
    const late = await post('one more thing', 'steer2', 'steerer');
    await eventually(async () => {
      const { rows } = await rt.db.pool.query(`SELECT 1 FROM session_signals WHERE admission_id = $1 AND consumed_by IS NOT NULL`, [late.admissionId]);
      return rows.length ? true : undefined;
    }, 'steer taken by the running turn');
    h.release();
    expect((await finished(turn.admissionId)).reply).toBe('done s2');
    expect((await finished(late.admissionId)).reply).toBe('saw: hold s2 | one more thing');
  });
});

const execFileP = promisify(execFile);
const hermes = (...args: string[]) => execFileP(process.execPath, ['bin/hermes.js', ...args], { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATABASE_URL: rt.config.DATABASE_URL } });
/** Waits until this process's agent cache has seen the announced change (the gateway and worker share it here). */
const cacheSees = (stopped: boolean) => eventually(async () => {
  const r = await rt.agents.get('default', 'stopper');
  return r && (agentStopped(r) !== undefined) === stopped ? true : undefined;
}, `the agent cache sees stopper ${stopped ? 'stopped' : 'running'}`);

describe('emergency stop', () => {
  it('hermes agents stop refuses new messages without the model and stops the running turn; resume undoes it', async () => {
    hold('e1'); // never released: the stop cuts it
    const turn = await post('hold e1', 'stop', 'stopper');
    const req = await inFlight('hold e1');
    const out = await hermes('agents', 'stop', 'stopper', '--reason', 'incident 42');
    expect(out.stdout).toMatch(/^Stopped default\/stopper: new messages are refused; 1 running turn\(s\) are being stopped\./);
    const { a, reply } = await finished(turn.admissionId);
    expect(a.outcome).toBe('interrupted');
    expect(reply).toBe('The turn was interrupted (stopped by the operator (emergency stop)). Send your message again or /retry.');
    await eventually(() => req.aborted || undefined, 'the model saw the request cut');

    await cacheSees(true);
    const calls = model.requests.length;
    const refused = await post('hello?', 'stop', 'stopper');
    expect(await answeredNow(refused)).toBe(stoppedReply);
    expect(await answeredNow(await post('/status', 'stop', 'stopper'))).toBe(stoppedReply);
    expect(model.requests.length).toBe(calls);

    await hermes('agents', 'resume', 'default/stopper');
    await cacheSees(false);
    const back = await post('back?', 'stop', 'stopper');
    expect((await finished(back.admissionId)).reply).toMatch(/back\?$/);
  });

  it('spec.stopped refuses as well, and a message admitted before the stop is refused when its turn comes', async () => {
    const queuedBefore = await admit(rt.db, { agentId: ids.stopper!, platform: 'api', sessionKey: 'agent:default/stopper:api:dm:before', user: { platformUserId: 'u1' }, content: 'queued before', replyTarget: { kind: 'api' } });
    await publishRevision(rt.db, testAgent(model.baseURL, { agent: { namespace: 'default', name: 'stopper' }, stopped: true }));
    await cacheSees(true);
    const calls = model.requests.length;
    expect(await answeredNow(await post('anyone?', 'spec', 'stopper'))).toBe(stoppedReply);
    await enqueueTurn(rt.queues, { admissionId: queuedBefore.admissionId });
    expect((await finished(queuedBefore.admissionId)).reply).toBe(stoppedReply);
    expect(model.requests.length).toBe(calls);
    await publishRevision(rt.db, testAgent(model.baseURL, { agent: { namespace: 'default', name: 'stopper' } }));
    await cacheSees(false);
  });
});

describe('max concurrent sessions', () => {
  it('a session over the cap waits queued (never dropped) and runs when a slot frees', async () => {
    const h = hold('m1');
    const first = await post('hold m1', 'slot-a', 'capped');
    await inFlight('hold m1');
    const second = await post('second session', 'slot-b', 'capped');
    // The worker took the job and found no free slot: the admission stays queued, the model untouched.
    // (Jobs are removed once done: a job gone is a job the worker ran.)
    await eventually(async () => ((await rt.queues.turns.getJob(second.admissionId)) === undefined ? true : undefined), 'the job of the second session processed');
    expect((await getAdmission(rt.db.pool, second.admissionId))?.state).toBe('queued');
    expect(requestsFor('second session')).toHaveLength(0);
    h.release();
    expect((await finished(first.admissionId)).reply).toBe('done m1');
    expect((await finished(second.admissionId)).reply).toBe('saw: second session');
  });
});

describe('unknown turns', () => {
  /** A turn whose worker died mid-turn in the API conversation `conversation`: recovery settles it unknown. */
  async function unknownTurn(conversation: string, content: string): Promise<{ id: string; sessionId: string }> {
    const probe = await post('/status', conversation); // binds the conversation's session key
    const { rows: [s] } = await rt.db.pool.query<{ session_key: string }>(`SELECT session_key FROM sessions WHERE id = $1`, [probe.sessionId]);
    const a = await admit(rt.db, { agentId: ids.demo!, platform: 'api', sessionKey: s!.session_key, user: { platformUserId: 'u1' }, content, replyTarget: { kind: 'api' } });
    const ghost = await registerInstance(rt.db.pool, 'worker');
    const lease = (await acquireLease(rt.db.pool, a.sessionId, ghost.id, 300, { instanceTtlSeconds: 3, steady: true }))!;
    expect((await startNextTurn(rt.db, lease))?.id).toBe(a.admissionId);
    await markStopped(rt.db.pool, ghost.id);
    await eventually(async () => (await getAdmission(rt.db.pool, a.admissionId))?.state === 'unknown', 'the dead turn unknown', 60_000);
    return { id: a.admissionId, sessionId: a.sessionId };
  }

  it('tells the user, /status shows it, /retry re-runs it once and /discard clears it', async () => {
    const lost = await unknownTurn('unknown', 'book the room');
    expect((await getObligationForAdmission(rt.db.pool, lost.id))?.content).toBe(unknownNotice);
    expect(unknownNotice).toContain('Send /retry to run it again, or /discard to drop it.');
    expect(await answeredNow(await post('/status', 'unknown'))).toContain('1 interrupted turn waiting: send /retry to run it again or /discard to drop it.');

    const retry = await post('/retry', 'unknown');
    expect((await finished(retry.admissionId)).reply).toBe('saw: book the room | book the room');
    expect(requestsFor('book the room')).toHaveLength(1); // run once
    expect(await getAdmission(rt.db.pool, lost.id)).toMatchObject({ state: 'terminal', outcome: 'discarded' });

    const again = await unknownTurn('unknown', 'cancel the order');
    const discard = await post('/discard', 'unknown');
    expect((await finished(discard.admissionId)).reply).toBe('Discarded the interrupted turn; it will not be run.');
    expect(await getAdmission(rt.db.pool, again.id)).toMatchObject({ state: 'terminal', outcome: 'discarded' });
    expect(requestsFor('cancel the order')).toHaveLength(0);
    expect(await answeredNow(await post('/status', 'unknown'))).not.toContain('interrupted turn');
  }, 120_000);
});
