// Retries, credential rotation, fallback, cool-down and the recovery ladder, through the real
// `openai` SDK against the wire-level fake. The clock is injected: no test waits for a delay.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  callModel, CooldownBook, CredentialPool, ModelRouter, OpenAIChatProvider, runAgentLoop, type ModelRoute, type SecretResolver,
} from '../../../services/agent/index.js';
import { startFakeOpenAI, type FakeOpenAI, type Script } from '../../support/fake-openai.js';
import { recordingClock, type RecordingClock } from './helpers.js';

let primary: FakeOpenAI;
let backup: FakeOpenAI;
let clock: RecordingClock;

beforeAll(async () => {
  primary = await startFakeOpenAI();
  backup = await startFakeOpenAI(() => ({ text: 'from backup' }));
});
afterAll(async () => {
  await primary?.close();
  await backup?.close();
});
beforeEach(() => {
  clock = recordingClock();
  primary.requests.length = 0;
  backup.requests.length = 0;
  backup.setScript(() => ({ text: 'from backup' }));
});

const provider = (baseURL: string, apiKey = 'sk-a', staleMs?: number) =>
  new OpenAIChatProvider({ apiKey, baseURL, timeoutMs: 10_000, ...(staleMs ? { staleMs } : {}) });
const route = (server: FakeOpenAI, keys = ['sk-a'], model = 'gpt-test', staleMs?: number): ModelRoute =>
  ({ key: `${server.baseURL}|${model}`, model, pool: new CredentialPool(server.baseURL, keys.map((k) => provider(server.baseURL, k, staleMs))) });
const request = () => ({ messages: [{ role: 'user' as const, content: 'hi' }], signal: new AbortController().signal });
const sequence = (...scripts: Script[]) => { let i = 0; return () => scripts[Math.min(i++, scripts.length - 1)]!; };
const authOf = (f: FakeOpenAI) => f.requests.map((r) => r.headers.authorization);

describe('every error class over the wire', () => {
  // status (or body) → classified reason, and whether the call was retried on the same route.
  it.each([
    ['401', { status: 401 }, 'auth', false],
    ['402', { status: 402 }, 'billing', false],
    ['408', { status: 408 }, 'timeout', true],
    ['413', { status: 413 }, 'payload_too_large', false],
    ['429 without Retry-After', { status: 429 }, 'rate_limit', true],
    ['500', { status: 500 }, 'server_error', true],
    ['502', { status: 502 }, 'server_error', true],
    ['503', { status: 503 }, 'overloaded', true],
    ['529', { status: 529 }, 'overloaded', true],
    ['context overflow', { status: 400, errorMessage: "This model's maximum context length is 8192 tokens" }, 'context_overflow', false],
    ['content policy', { status: 400, errorMessage: 'Request blocked by content policy' }, 'content_policy', false],
    ['malformed streamed body', { raw: { contentType: 'text/event-stream', body: 'data: {"id": "x", "choices": [\n\n' } }, 'stream', true],
  ] as [string, Script, string, boolean][])('%s → %s', async (_name, script, reason, retried) => {
    primary.setScript(() => script);
    const r = await callModel({ routes: [route(primary)], request: request(), clock });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.reason).toBe(reason);
    expect(primary.requests.length > 1).toBe(retried);
    // Backoff without Retry-After: min(2·2^(n-1), 60) s plus jitter, never a real wait.
    if (reason === 'rate_limit') expect(clock.sleeps[0]).toBeGreaterThanOrEqual(2_000);
  });
});

describe('model call recovery', () => {
  it('honours Retry-After on 429 with SDK retries off (exactly one extra request)', async () => {
    primary.setScript(sequence({ status: 429, headers: { 'retry-after': '7' } }, { text: 'fine' }));
    const r = await callModel({ routes: [route(primary)], request: request(), clock });
    expect(r.ok && r.completion.text).toBe('fine');
    expect(primary.requests).toHaveLength(2);
    expect(clock.sleeps).toEqual([7_000]);
  });

  it('retries 3 times with backoff, then climbs the recovery ladder for overloaded only', async () => {
    primary.setScript(() => ({ status: 503 }));
    const r = await callModel({ routes: [route(primary)], request: request(), clock });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.reason).toBe('overloaded');
    const retry = [2_000, 4_000, 8_000];
    expect(clock.sleeps).toEqual([...retry, 15_000, ...retry, 30_000, ...retry, 60_000, ...retry, 60_000, ...retry, 60_000, ...retry]);
    expect(primary.requests).toHaveLength(6 * 4);
  });

  it('does not retry a content-policy refusal and does not climb the ladder for bad requests', async () => {
    primary.setScript(() => ({ status: 400, errorMessage: 'Request blocked by content policy' }));
    const r = await callModel({ routes: [route(primary), route(backup)], request: request(), clock });
    expect(!r.ok && r.error.reason).toBe('content_policy');
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(0);
    expect(clock.sleeps).toEqual([]);
  });

  it('asks for compression on context overflow instead of retrying', async () => {
    primary.setScript(() => ({ status: 400, errorMessage: "This model's maximum context length is 4096 tokens" }));
    const r = await callModel({ routes: [route(primary), route(backup)], request: request(), clock });
    expect(!r.ok && r.compress).toBe(true);
    expect(primary.requests).toHaveLength(1);
  });

  it('rate limit: retries the same key once, then rotates to the next key', async () => {
    primary.setScript((_b, req) => (req.headers.authorization === 'Bearer sk-a' ? { status: 429 } : { text: 'key b' }));
    const r = await callModel({ routes: [route(primary, ['sk-a', 'sk-b'])], request: request(), clock });
    expect(r.ok && r.completion.text).toBe('key b');
    expect(authOf(primary)).toEqual(['Bearer sk-a', 'Bearer sk-a', 'Bearer sk-b']);
    expect(clock.sleeps).toEqual([2_000]);
  });

  it('billing and auth rotate the key at once, without waiting', async () => {
    primary.setScript((_b, req) => (req.headers.authorization === 'Bearer sk-a' ? { status: 402 } : req.headers.authorization === 'Bearer sk-b' ? { status: 401 } : { text: 'key c' }));
    const r = await callModel({ routes: [route(primary, ['sk-a', 'sk-b', 'sk-c'])], request: request(), clock });
    expect(r.ok && r.completion.text).toBe('key c');
    expect(authOf(primary)).toEqual(['Bearer sk-a', 'Bearer sk-b', 'Bearer sk-c']);
    expect(clock.sleeps).toEqual([]);
  });

  it('falls back per turn, cools the primary down (60 s, doubling) and returns to it afterwards', async () => {
    primary.setScript(() => ({ status: 401 }));
    const cooldowns = new CooldownBook();
    const routes = [route(primary), route(backup, ['sk-a'], 'gpt-backup')];
    const first = await callModel({ routes, request: request(), clock, cooldowns });
    expect(first.ok && first.fellBack).toBe(true);
    expect(first.ok && first.completion.text).toBe('from backup');
    expect(primary.requests).toHaveLength(1);

    // Cooling: the next turn starts with the fallback and never touches the primary.
    clock.advance(59_000);
    await callModel({ routes, request: request(), clock, cooldowns });
    expect(primary.requests).toHaveLength(1);

    // Cool-down over: the primary is tried first again; a second failure cools it for 120 s.
    clock.advance(2_000);
    await callModel({ routes, request: request(), clock, cooldowns });
    expect(primary.requests).toHaveLength(2);
    expect(cooldowns.isCooling(routes[0]!.key, clock.now() + 119_000)).toBe(true);
    expect(cooldowns.isCooling(routes[0]!.key, clock.now() + 121_000)).toBe(false);
  });

  it('never falls back silently from an explicitly chosen model', async () => {
    primary.setScript(() => ({ status: 401 }));
    const out = await runAgentLoop({
      sessionId: 's', routes: [route(primary), route(backup)], explicitModel: true, system: [], history: [{ role: 'user', content: 'hi' }],
      tools: [], signal: new AbortController().signal, clock, persist: { assistant: async () => undefined, toolResult: async () => undefined },
    });
    expect(out.outcome).toBe('failed');
    expect(out.reply).toMatch(/chose gpt-test explicitly/);
    expect(backup.requests).toHaveLength(0);
  });

  it('retries a stream that broke before any text (1 s, 2 s), but not one that already delivered text', async () => {
    primary.setScript(sequence({ text: 'abc', breakAfterChunks: 0 }, { text: 'abc', breakAfterChunks: 0 }, { text: 'whole' }));
    const r = await callModel({ routes: [route(primary)], request: request(), clock });
    expect(r.ok && r.completion.text).toBe('whole');
    expect(clock.sleeps).toEqual([1_000, 2_000]);

    primary.requests.length = 0;
    primary.setScript(() => ({ text: 'abcdef', chunks: 3, breakAfterChunks: 1 }));
    const broke = await callModel({ routes: [route(primary), route(backup)], request: request(), clock });
    expect(broke.ok).toBe(false);
    if (!broke.ok) {
      expect(broke.error.reason).toBe('stream');
      expect(broke.partialText).toBe('ab');
    }
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(0);
  });

  it('gives up on a stale stream (the server sees the connection close) and retries it', async () => {
    let first = true;
    primary.setScript(() => {
      if (!first) return { text: 'fresh' };
      first = false;
      return { hold: new Promise<void>(() => undefined) };
    });
    const r = await callModel({ routes: [route(primary, ['sk-a'], 'gpt-test', 150)], request: request(), clock });
    expect(r.ok && r.completion.text).toBe('fresh');
    expect(clock.sleeps).toEqual([1_000]);
    await expect.poll(() => primary.requests[0]!.aborted).toBe(true);
  });

  describe('auth: refresh then rotate', () => {
    // A resolver whose values can change between calls (a rotated Kubernetes Secret).
    const secrets = (values: Record<string, string>) => {
      const resolved: string[] = [];
      const resolver: SecretResolver = { source: 'test values', resolve: async (_ns, ref) => { resolved.push(ref.key); return values[ref.key]; } };
      return { values, resolved, resolver };
    };
    const endpoint = () => ({ provider: 'openai' as const, model: 'gpt-test', baseURL: primary.baseURL, apiKeyRef: { name: 'keys', key: 'A' }, extraApiKeyRefs: [{ name: 'keys', key: 'B' }] });

    it('re-resolves the failing key on 401 and retries once with the new value before rotating', async () => {
      const s = secrets({ A: 'sk-old', B: 'sk-b' });
      const router = new ModelRouter(s.resolver, { timeoutMs: 10_000 });
      const r0 = await router.route('default', endpoint());
      s.values.A = 'sk-new'; // the Secret was rotated after the pool was built
      primary.setScript((_b, req) => (req.headers.authorization === 'Bearer sk-new' ? { text: 'refreshed' } : { status: 401 }));
      const r = await callModel({ routes: [r0], request: request(), clock });
      expect(r.ok && r.completion.text).toBe('refreshed');
      expect(authOf(primary)).toEqual(['Bearer sk-old', 'Bearer sk-new']);
      expect(clock.sleeps).toEqual([]);
      // The next turn keeps the same pool (its fingerprint follows the refreshed value).
      expect((await router.route('default', endpoint())).pool).toBe(r0.pool);
    });

    it('rotates when the re-resolved value did not change, or the refreshed key is refused too (403)', async () => {
      const s = secrets({ A: 'sk-a', B: 'sk-b' });
      const router = new ModelRouter(s.resolver, { timeoutMs: 10_000 });
      const unchanged = await router.route('default', endpoint());
      primary.setScript((_b, req) => (req.headers.authorization === 'Bearer sk-b' ? { text: 'key b' } : { status: 401 }));
      const r = await callModel({ routes: [unchanged], request: request(), clock });
      expect(r.ok && r.completion.text).toBe('key b');
      expect(authOf(primary)).toEqual(['Bearer sk-a', 'Bearer sk-b']);
      expect(s.resolved.slice(-1)).toEqual(['A']); // it did look before rotating

      primary.requests.length = 0;
      const t = secrets({ A: 'sk-a1', B: 'sk-b1' });
      const router2 = new ModelRouter(t.resolver, { timeoutMs: 10_000 });
      const route2 = await router2.route('default', endpoint());
      t.values.A = 'sk-a2';
      primary.setScript((_b, req) => (req.headers.authorization === 'Bearer sk-b1' ? { text: 'key b1' } : { status: 403 }));
      const r2 = await callModel({ routes: [route2], request: request(), clock });
      expect(r2.ok && r2.completion.text).toBe('key b1');
      expect(authOf(primary)).toEqual(['Bearer sk-a1', 'Bearer sk-a2', 'Bearer sk-b1']);
    });
  });
});
