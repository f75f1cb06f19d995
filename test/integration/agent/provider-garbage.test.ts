// What a model server sends that it should not, through the real `openai` SDK against the
// wire-level fake: token counts that are not counts (negative, text, absurd, missing) are never
// taken as given — the call is priced on counts estimated from its text instead — fields of the
// wrong type stay out of the answer, and a stream that keeps sending a little is still bounded by
// the whole request's timeout (HERMES_MODEL_TIMEOUT_SECONDS), where the stale-stream timeout never fires.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callModel, classifyError, CredentialPool, OpenAIChatProvider, type CompletionRequest, type ModelRoute } from '../../../services/agent/index.js';
import { startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { recordingClock } from './helpers.js';

let fake: FakeOpenAI;
beforeAll(async () => { fake = await startFakeOpenAI(); });
afterAll(async () => { await fake?.close(); });

const provider = (timeoutMs = 10_000) => new OpenAIChatProvider({ apiKey: 'sk-a', baseURL: fake.baseURL, timeoutMs, staleMs: 10_000 });
/** 400 characters of user text: ceil((400 + 8) / 4) = 102 estimated input tokens. */
const request = (): CompletionRequest => ({ model: 'gpt-test', messages: [{ role: 'user', content: 'q'.repeat(400) }], signal: new AbortController().signal });
const sse = (...chunks: object[]) => ({ raw: { contentType: 'text/event-stream', body: `${chunks.map((c) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-test', ...c })}\n\n`).join('')}data: [DONE]\n\n` } });

describe('token counts a provider sends', () => {
  it.each([
    ['negative', { prompt_tokens: -1_000_000, completion_tokens: 10 }],
    ['text', { prompt_tokens: 'many', completion_tokens: 10 }],
    ['fractional', { prompt_tokens: 12.5, completion_tokens: 10 }],
    ['beyond any context window', { prompt_tokens: 1e15, completion_tokens: 10 }],
    ['a completion count missing', { prompt_tokens: 10 }],
    ['no usage at all', null],
  ])('%s: the call is priced on counts estimated from its text', async (_, usage) => {
    fake.setScript(() => ({ text: 'a'.repeat(40), usage }));
    const out = await provider().complete(request());
    expect(out.text).toBe('a'.repeat(40));
    expect(out.usage).toEqual({ inputTokens: 102, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: true });
  });

  it('takes readable counts as given, and no discount from an unreadable cached count or a negative charge', async () => {
    fake.setScript(() => ({ text: 'ok', usage: { prompt_tokens: 1_000, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 400 }, completion_tokens_details: { reasoning_tokens: 5 }, cost: 0.01 } }));
    expect((await provider().complete(request())).usage).toEqual({ inputTokens: 1_000, outputTokens: 20, cacheReadTokens: 400, cacheWriteTokens: 0, reasoningTokens: 5, costUsd: 0.01 });
    fake.setScript(() => ({ text: 'ok', usage: { prompt_tokens: 1_000, completion_tokens: 20, prompt_tokens_details: { cached_tokens: -5_000_000 }, cost: -3 } }));
    expect((await provider().complete(request())).usage).toEqual({ inputTokens: 1_000, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
  });
});

describe('fields of the wrong type', () => {
  it('leaves non-text content out of the answer, and takes tool arguments sent as an object as their JSON', async () => {
    fake.setScript(() => sse(
      { choices: [{ index: 0, delta: { role: 'assistant', content: 12345 }, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: 'fine', reasoning_content: { no: 1 } }, finish_reason: null }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_time', arguments: { timezone: 'UTC' } } }] }, finish_reason: 'tool_calls' }] },
      { choices: [{ index: 0, delta: { tool_calls: 'not a list' }, finish_reason: 7 }] },
    ));
    const deltas: string[] = [];
    const out = await provider().complete({ ...request(), onDelta: (t) => deltas.push(t) });
    expect(out.text).toBe('fine');
    expect(deltas).toEqual(['fine']);
    expect(out.reasoning).toBeUndefined();
    expect(out.toolCalls).toEqual([{ id: 'call_1', name: 'get_time', arguments: '{"timezone":"UTC"}' }]);
    expect(out.finishReason).toBe('tool_calls');
  });
});

describe('tool call ids', () => {
  // A server answering two calls with the same id (and one with none) had both run and both
  // results sent back under one id; each call now has an id of its own.
  it('gives every call of a message an id of its own', async () => {
    fake.setScript(() => sse(
      { choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [
        { index: 0, id: 'dup', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        { index: 1, id: 'dup', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        { index: 2, type: 'function', function: { name: 'get_time', arguments: '{}' } },
      ] }, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ));
    const out = await provider().complete(request());
    expect(out.toolCalls.map((c) => c.id)).toEqual(['dup', 'dup_1', 'call_2']);
  });
});

describe('a response that is not a stream', () => {
  it.each([
    ['an HTML page', { contentType: 'text/html', body: '<html><body>Sign in to continue</body></html>' }, 'text/html'],
    ['an empty stream', { contentType: 'text/event-stream', body: 'data: [DONE]\n\n' }, 'text/event-stream'],
  ])('%s is a stream error saying what came, not an empty answer', async (_, raw, type) => {
    fake.setScript(() => ({ raw }));
    const err = await provider().complete(request()).then(() => undefined, (e: unknown) => e);
    expect((err as Error).message).toBe(`the response carried no stream events (content-type ${type}); is the base URL the provider's API?`);
    expect(classifyError(err)).toMatchObject({ reason: 'stream', retryable: true });
  });
});

describe('the whole request is bounded', () => {
  it('ends a stream that keeps sending a little past the request timeout, as a timeout, closing the connection', async () => {
    fake.setScript(() => ({ dribbleMs: 20 }));
    const before = fake.requests.length;
    const err = await provider(400).complete(request()).then(() => undefined, (e: unknown) => e);
    expect((err as Error).message).toMatch(/timed out: no complete answer within 0.4 s \(HERMES_MODEL_TIMEOUT_SECONDS\)/);
    expect(classifyError(err)).toMatchObject({ reason: 'timeout', retryable: true });
    await expect.poll(() => fake.requests[before]!.aborted).toBe(true);
  });

  it('does not retry it once its text reached the user: the call fails instead of holding the turn', async () => {
    fake.setScript(() => ({ dribbleMs: 20 }));
    const before = fake.requests.length;
    const route: ModelRoute = { key: `${fake.baseURL}|gpt-test`, model: 'gpt-test', pool: new CredentialPool(fake.baseURL, [provider(300)]) };
    const clock = recordingClock();
    const delivered: string[] = [];
    const r = await callModel({ routes: [route], request: { ...request(), onDelta: (t) => delivered.push(t) }, clock });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.reason).toBe('timeout');
      expect(r.partialText).toMatch(/^\.+$/);
    }
    expect(delivered.length).toBeGreaterThan(0);
    expect(fake.requests.length - before).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });
});
