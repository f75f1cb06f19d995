import { describe, expect, it } from 'vitest';
import { FALLBACK_MAX_CHARS, KEEP_RECENT_TOKENS, SUMMARY_PREFIX, SummaryCooldown, compress, fallbackSummary, hygieneTokens, splitPoint, tailBudget, thresholdTokens, type ChatMessage } from '../../services/agent/index.js';

const user = (i: number): ChatMessage => ({ role: 'user', content: `message ${i} ${'x'.repeat(50)}`, seq: i });
/** `count` alternating user/assistant messages of exactly `tokens` estimated tokens each. */
const sized = (count: number, tokens: number): ChatMessage[] =>
  Array.from({ length: count }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'y'.repeat(tokens * 4 - 8), seq: i }));
const call = (...ids: string[]): ChatMessage => ({ role: 'assistant', content: '', toolCalls: ids.map((id) => ({ id, name: 't', arguments: '{}' })) });
const result = (id: string): ChatMessage => ({ role: 'tool', content: 'ok', toolCallId: id });

describe('compression', () => {
  it('compresses at 0.75 of windows under 512K tokens and at 0.50 above', () => {
    expect(thresholdTokens(200_000)).toBe(150_000);
    expect(thresholdTokens(1_000_000)).toBe(500_000);
  });

  it('starts hygiene pre-compression at 85 % of the window', () => {
    expect(hygieneTokens(4_000)).toBe(3_400);
    expect(hygieneTokens()).toBe(108_800);
  });

  it('never summarises the last 20 messages; a conversation of 20 or fewer has nothing to compress', () => {
    const plain = Array.from({ length: 30 }, (_, i) => user(i));
    // 30 small messages fit the 20 000-token budget twice over: the cut leaves the floor of 20.
    expect(splitPoint(plain)).toBe(10);
    expect(splitPoint(plain.slice(0, 21))).toBe(1);
    expect(splitPoint(plain.slice(0, 20))).toBe(0);
  });

  it('keeps more than 20 small messages when they fit 1.5× the budget, and exactly the floor when they are big', () => {
    // 100 tokens each: 30 fit the soft ceiling of 3000 (1.5 × 2000), the 31st does not.
    expect(splitPoint(sized(40, 100), { keepRecentTokens: 2_000, contextWindow: 1_000_000 })).toBe(10);
    // 1000 tokens each: the budget holds 3, the floor keeps 20.
    expect(splitPoint(sized(30, 1_000), { keepRecentTokens: 2_000, contextWindow: 1_000_000 })).toBe(10);
    // Everything fits 1.5× the budget (3000 ≤ 3750): redone against the plain 2500, the message that crosses it stays.
    expect(splitPoint(sized(30, 100), { keepRecentTokens: 2_500, contextWindow: 1_000_000 })).toBe(4);
  });

  it('caps the budget at 0.20 of the threshold, so a small window still compresses', () => {
    expect(tailBudget()).toBe(19_200); // 128K window: 96 000 × 0.20 < 20 000
    expect(tailBudget({ contextWindow: 1_000_000 })).toBe(KEEP_RECENT_TOKENS);
    expect(tailBudget({ contextWindow: 2_000 })).toBe(300);
    // 40 tokens each under a 450-token soft ceiling: 11 would fit although the setting says 20 000 — the floor keeps 20.
    expect(splitPoint(sized(30, 40), { contextWindow: 2_000 })).toBe(10);
    expect(splitPoint(sized(40, 40), { contextWindow: 2_000 })).toBe(20);
  });

  it('never separates a tool call from its results', () => {
    const m = sized(30, 1_000);
    // The floor would start the tail at 10, right after a call's results: it moves back to the call.
    m.splice(7, 3, call('a', 'b'), result('a'), result('b'));
    expect(splitPoint(m, { keepRecentTokens: 2_000, contextWindow: 1_000_000 })).toBe(7);
    // The floor would start the tail on a result (index 10): it moves back to the call at 9.
    const n = sized(30, 1_000);
    n.splice(9, 3, call('c', 'd'), result('c'), result('d'));
    expect(splitPoint(n, { keepRecentTokens: 2_000, contextWindow: 1_000_000 })).toBe(9);
  });

  it('keeps the latest user message in the tail, ignoring an earlier summary', () => {
    // A summary, a question, then ten bulky call/result pairs: the floor alone would summarise the question.
    const chain = Array.from({ length: 10 }, (_, i) => [call(`x${i}`), { ...result(`x${i}`), content: 'r'.repeat(4_000) }]).flat();
    const m: ChatMessage[] = [{ role: 'user', content: `${SUMMARY_PREFIX}\nearlier` }, ...sized(6, 100).slice(0, 5), { role: 'user', content: 'the question' }, ...chain];
    expect(splitPoint(m, { keepRecentTokens: 2_000, contextWindow: 1_000_000 })).toBe(6);
    // A summary is not a user message to keep: with no real one, the floor decides (1, not 0).
    expect(splitPoint([m[0]!, ...chain], { keepRecentTokens: 2_000, contextWindow: 1_000_000 })).toBe(1);
  });

  it('falls back to a deterministic digest of at most 8000 characters, keeping the newest lines', () => {
    const many = Array.from({ length: 500 }, (_, i) => user(i));
    const s = fallbackSummary(many);
    expect(s.length).toBeLessThanOrEqual(FALLBACK_MAX_CHARS);
    expect(s).toContain('message 499');
    expect(s).not.toContain('message 1 ');
    expect(fallbackSummary(many)).toBe(s);
  });

  it('uses the digest while the summary call cools down (60 s → 300 s → 900 s)', async () => {
    const cooldown = new SummaryCooldown();
    let now = 0;
    let calls = 0;
    const failing = async () => { calls++; throw new Error('down'); };
    const messages = Array.from({ length: 25 }, (_, i) => user(i));
    const run = () => compress(messages, { session: 's', now: () => now, cooldown, summarise: failing });
    expect((await run())!.source).toBe('fallback');
    expect(calls).toBe(1);
    now += 59_000;
    await run();
    expect(calls).toBe(1); // cooling: not asked again
    now += 2_000;
    await run();
    expect(calls).toBe(2);
    expect(cooldown.cooling('s', now + 299_000)).toBe(true);
    expect(cooldown.cooling('s', now + 301_000)).toBe(false);
    const ok = await compress(messages, { session: 't', now: () => now, cooldown, summarise: async () => 'short' });
    expect(ok).toMatchObject({ source: 'model', coversSeq: 4, replaced: 5 });
    expect(ok!.messages).toHaveLength(21);
    expect(ok!.messages[0]!.content).toBe('[Summary of the earlier conversation]\nshort');
  });
});
