// Compression inside the worker: over the threshold the older conversation becomes a summary
// (a marker row in the transcript; later turns start from it) and a token-budgeted tail stays
// verbatim; a context overflow from the provider compresses and retries, at most 3 times;
// `/compress` runs it on demand; a stored history at 85 % of the window is compressed before the
// turn loads its prompt (hygiene).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, appendMessage, enqueueTurn, getAdmission, getObligationForAdmission, listTranscript, type CompiledAgent } from '../../../services/core/index.js';
import { CredentialPool, OpenAIChatProvider, SUMMARY_INSTRUCTION, focusInstruction, SummaryCooldown, runAgentLoop, type ChatMessage } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, withoutSessionFacts, type ChatRequestBody, type FakeOpenAI, type Script } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';
import { recordingClock } from './helpers.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let overflowing = 0;

const isSummary = (b: ChatRequestBody) => b.messages[0]?.content === SUMMARY_INSTRUCTION;
function script(b: ChatRequestBody): Script {
  if (isSummary(b)) return { text: 'SUMMARY: they talked a lot.' };
  if (overflowing > 0) {
    overflowing--;
    return { status: 400, errorMessage: "This model's maximum context length is 1000 tokens" };
  }
  return { text: `answer to ${lastUser(b)}` };
}

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url));
  worker = await startTestWorker(rt, { loop: { clock: recordingClock() } });
});
afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

const agentFor = (name: string, contextWindow: number, persona = 'You are the test agent.'): Partial<CompiledAgent> => ({
  agent: { namespace: 'default', name },
  model: { provider: 'openai', model: 'gpt-test', baseURL: model.baseURL, apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' }, contextWindow },
  persona,
});

/** Content of exactly `tokens` estimated tokens (4 characters a token, 8 characters of overhead). */
const sized = (label: string, tokens: number) => `${label} `.padEnd(tokens * 4 - 8, 'x');

/** A session with one real turn ("start"), then `seed` stored messages (user/assistant in turn). */
async function conversation(name: string, contextWindow: number, seed: number | string[], persona?: string) {
  const agentId = await createTestAgent(rt, model.baseURL, agentFor(name, contextWindow, persona));
  const key = `agent:default/${name}:api:dm:u1`;
  const say = async (content: string) => {
    const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'u1' }, content, replyTarget: { kind: 'api' } });
    await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
    const a = await eventually(async () => {
      const row = await getAdmission(rt.db.pool, adm.admissionId);
      return row?.state === 'terminal' ? row : undefined;
    }, 'terminal');
    return { a, sessionId: adm.sessionId, reply: (await getObligationForAdmission(rt.db.pool, adm.admissionId))!.content };
  };
  const { sessionId } = await say('start');
  const contents = typeof seed === 'number' ? Array.from({ length: seed }, (_, i) => `old ${i} ${'lorem ipsum '.repeat(20)}`) : seed;
  for (const [i, content] of contents.entries()) {
    await appendMessage(rt.db.pool, sessionId, { role: i % 2 ? 'assistant' : 'user', content });
  }
  return { say, sessionId, agentId };
}

const requestsFor = (content: string) => model.requests.filter((r) => !isSummary(r.body) && lastUser(r.body) === content);

describe('compression in the worker', () => {
  it('summarises the older conversation over the threshold and keeps the last 20 messages verbatim', async () => {
    // Window 2000: threshold 1500, tail budget 300 tokens (0.20 of the threshold), soft ceiling 450.
    // 24 messages of 64 tokens (~1550 with the prompt): over the threshold, under the 85 % hygiene mark.
    const { say, sessionId } = await conversation('long', 2_000, 24);
    const summariesBefore = model.requests.filter((r) => isSummary(r.body)).length;
    const { reply } = await say('and now?');
    expect(reply).toBe('answer to and now?');
    expect(model.requests.filter((r) => isSummary(r.body)).length).toBe(summariesBefore + 1);
    const sent = withoutSessionFacts(requestsFor('and now?')[0]!.body.messages);
    expect(sent[0]!.role).toBe('system');
    expect(sent[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    // Only 7 of these messages fit the 450-token soft ceiling, but the last 20 are never summarised.
    expect(sent.slice(2).map((m) => m.content.split(' ').slice(0, 2).join(' '))).toEqual([...Array.from({ length: 19 }, (_, i) => `old ${5 + i}`), 'and now?']);

    const marker = (await listTranscript(rt.db.pool, sessionId)).find((m) => m.role === 'system')!;
    expect(marker.content).toMatch(/^\[compressed through message \d+\]\n\[Summary of the earlier conversation\]/);
    // The next turn starts from the stored summary (nothing before it is re-sent).
    await say('next');
    const next = withoutSessionFacts(requestsFor('next')[0]!.body.messages);
    expect(next[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(JSON.stringify(next)).not.toContain('old 0 ');
  });

  it('keeps recent messages by tokens: 34 small messages stay when they fit the tail budget', async () => {
    // 4 old messages of 300 tokens, then 33 of 10: the tail takes small messages while they fit
    // 450 tokens (5 + 33 × 10 = 335), and stops at the first big one — far more than 20 messages.
    const seed = [...[0, 1, 2, 3].map((i) => sized(`big ${i}`, 300)), ...Array.from({ length: 33 }, (_, i) => sized(`small ${i}`, 10))];
    const { say } = await conversation('tokens', 2_000, seed);
    expect((await say('what now?')).reply).toBe('answer to what now?');
    const sent = withoutSessionFacts(requestsFor('what now?')[0]!.body.messages);
    expect(sent[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(sent.slice(2)).toHaveLength(34);
    expect(sent[2]!.content).toMatch(/^small 0 x/);
    expect(JSON.stringify(sent)).not.toContain('big 3');
  });

  it('compresses and retries on a context overflow, and gives up after 3 attempts with a /new hint', async () => {
    const { say } = await conversation('overflow', 1_000_000, 30);
    overflowing = 1;
    expect((await say('retry me')).reply).toBe('answer to retry me');
    expect(requestsFor('retry me')).toHaveLength(2);

    overflowing = 100;
    const { a, reply } = await say('hopeless');
    overflowing = 0;
    expect(a.outcome).toBe('failed');
    expect(reply).toMatch(/too long for the model even after compression.*\/new/);
    expect(requestsFor('hopeless')).toHaveLength(4); // the first call + one per compression
  });

  it('/compress runs on demand without a model answer turn', async () => {
    const { say } = await conversation('ondemand', 1_000_000, 30);
    const { reply } = await say('/compress');
    expect(reply).toMatch(/^Compressed \d+ earlier messages into a model-written summary\.$/);
    expect(requestsFor('/compress')).toHaveLength(0);
    await say('after');
    const sent = withoutSessionFacts(requestsFor('after')[0]!.body.messages);
    expect(sent[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(sent.map((m) => m.content)).not.toContain('/compress');
  });

  it('/compress <focus> summarises now, asking the summary to favour the focus; neither line is conversation', async () => {
    const { say } = await conversation('focused', 1_000_000, 30);
    const summaries = model.requests.filter((r) => isSummary(r.body)).length;
    const { reply } = await say('/compress  the database design');
    expect(reply).toMatch(/^Compressed \d+ earlier messages into a model-written summary\.$/);
    expect(requestsFor('/compress  the database design')).toHaveLength(0);
    const summary = model.requests.filter((r) => isSummary(r.body));
    expect(summary).toHaveLength(summaries + 1);
    expect(summary.at(-1)!.body.messages[1]).toEqual({ role: 'system', content: focusInstruction('the database design') });
    await say('after focus');
    const sent = withoutSessionFacts(requestsFor('after focus')[0]!.body.messages);
    expect(sent[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(JSON.stringify(sent)).not.toMatch(/\/compress|Compressed \d+/);
  });

  it('/compress here N keeps exactly the last N turns, even in a conversation of 20 messages or fewer (Hermes\' "here [N]")', async () => {
    const { say } = await conversation('here', 1_000_000, 16);
    const { reply } = await say('/compress here 2');
    expect(reply).toMatch(/^Compressed \d+ earlier messages into a model-written summary\.$/);
    await say('after here');
    const sent = withoutSessionFacts(requestsFor('after here')[0]!.body.messages).filter((m) => m.role !== 'system');
    expect(sent[0]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    // The last two turns (old 12 + its answer, old 14 + its answer), then the new message.
    expect(sent.slice(1).map((m) => m.content.split(' ').slice(0, 2).join(' '))).toEqual(['old 12', 'old 13', 'old 14', 'old 15', 'after here']);
    expect((await say('/compress here 9')).reply).toBe('Nothing to compress: the conversation has no more than 9 turn(s).');
  });

  it('/compress on a conversation of 20 messages or fewer changes nothing and says why', async () => {
    const { say, sessionId } = await conversation('short', 1_000_000, 16);
    const summaries = model.requests.filter((r) => isSummary(r.body)).length;
    expect((await say('/compress')).reply).toBe('Nothing to compress yet: the last 20 messages are always kept as they are.');
    expect(model.requests.filter((r) => isSummary(r.body)).length).toBe(summaries);
    expect((await listTranscript(rt.db.pool, sessionId)).filter((m) => m.role === 'system')).toHaveLength(0);
  });
});

describe('hygiene pre-compression (85 % of the window, before the turn)', () => {
  // Window 4000: hygiene at 3400 tokens of stored history; the loop's own threshold is 3000.
  // Messages of 120 tokens (more than 20 of them, so there is something to compress). The persona changes between turns; the stored prompt is rebuilt only
  // after a compression, so the prompt a turn sends tells whether it compressed before loading it.
  const first = 'You are the first persona.';
  const second = 'You are the second persona.';
  async function grown(name: string, seeded: number) {
    const c = await conversation(name, 4_000, Array.from({ length: seeded }, (_, i) => sized(`old ${i}`, 120)), first);
    await createTestAgent(rt, model.baseURL, agentFor(name, 4_000, second));
    await eventually(async () => (await rt.agents.getById(c.agentId))?.compiled.persona === second || undefined, 'the new revision');
    return c;
  }
  const identity = async (sessionId: string) =>
    (await rt.db.pool.query<{ prompt_identity: string | null }>(`SELECT prompt_identity FROM sessions WHERE id = $1`, [sessionId])).rows[0]!.prompt_identity;

  it('compresses a stored history at 85 % before the first model request, which then carries the summary and a rebuilt prompt', async () => {
    const { say, sessionId } = await grown('hygiene', 30); // ~3610 tokens of history
    const seen = model.requests.length;
    expect((await say('go on')).reply).toBe('answer to go on');
    const turn = model.requests.slice(seen);
    // One summary request, then the answer request: nothing was sent before the compression.
    expect(turn.map((r) => (isSummary(r.body) ? 'summary' : 'answer'))).toEqual(['summary', 'answer']);
    const sent = withoutSessionFacts(turn[1]!.body.messages);
    expect(sent[0]).toEqual({ role: 'system', content: second });
    expect(sent[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(sent.slice(2).map((m) => m.content.split(' ').slice(0, 2).join(' '))).toEqual([...Array.from({ length: 19 }, (_, i) => `old ${11 + i}`), 'go on']);
    expect(JSON.stringify(sent)).not.toContain('old 0 ');
    const rows = await listTranscript(rt.db.pool, sessionId);
    expect(rows.filter((m) => m.role === 'system')).toHaveLength(1);
    expect(await identity(sessionId)).not.toBeNull(); // rebuilt in this turn, after the compression
  });

  it('leaves a history under 85 % to the loop: its own threshold compresses, with the stored prompt', async () => {
    const { say, sessionId } = await grown('no-hygiene', 26); // ~3130 tokens: over 3000, under 3400
    const seen = model.requests.length;
    expect((await say('go on')).reply).toBe('answer to go on');
    const turn = model.requests.slice(seen);
    expect(turn.map((r) => (isSummary(r.body) ? 'summary' : 'answer'))).toEqual(['summary', 'answer']);
    const sent = withoutSessionFacts(turn[1]!.body.messages);
    expect(sent[0]).toEqual({ role: 'system', content: first });
    expect(sent[1]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(await identity(sessionId)).toBeNull(); // the loop's compression: rebuilt on the next turn
  });
});

describe('the tail budget setting', () => {
  it('reaches the compressor through the loop options', async () => {
    // 41 messages of 100 tokens in a 1M window. With keepRecentTokens 2000 the tail holds the last
    // 30 (3000 = 1.5 × 2000); with the default 20 000 all would fit and only the floor of 20 would stay.
    const history: ChatMessage[] = Array.from({ length: 41 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: sized(`m${i}`, 100) }));
    history[40] = { role: 'user', content: 'overflow then answer' };
    const pool = new CredentialPool('fake', [new OpenAIChatProvider({ apiKey: 'sk-a', baseURL: model.baseURL, timeoutMs: 10_000 })]);
    overflowing = 1;
    const out = await runAgentLoop({
      sessionId: 'budget', routes: [{ key: 'fake', model: 'gpt-test', pool }], system: [], history, tools: [],
      signal: new AbortController().signal, clock: recordingClock(),
      compression: { cooldown: new SummaryCooldown(), contextWindow: 1_000_000, keepRecentTokens: 2_000 },
      persist: { assistant: async () => undefined, toolResult: async () => undefined },
    });
    expect(out.reply).toBe('answer to overflow then answer');
    const retried = withoutSessionFacts(requestsFor('overflow then answer').at(-1)!.body.messages);
    expect(retried[0]!.content).toBe('[Summary of the earlier conversation]\nSUMMARY: they talked a lot.');
    expect(retried.slice(1).map((m) => m.content.split(' ')[0])).toEqual([...Array.from({ length: 29 }, (_, i) => `m${11 + i}`), 'overflow']);
  });
});
