import { describe, expect, it } from 'vitest';
import { FALLBACK_MAX_CHARS, SummaryCooldown, compress, fallbackSummary, splitPoint, thresholdTokens, type ChatMessage } from '../../services/agent/index.js';

const user = (i: number): ChatMessage => ({ role: 'user', content: `message ${i} ${'x'.repeat(50)}`, seq: i });

describe('compression', () => {
  it('compresses at 0.75 of windows under 512K tokens and at 0.50 above', () => {
    expect(thresholdTokens(200_000)).toBe(150_000);
    expect(thresholdTokens(1_000_000)).toBe(500_000);
  });

  it('protects the last 20 messages and never separates a tool call from its results', () => {
    const plain = Array.from({ length: 30 }, (_, i) => user(i));
    expect(splitPoint(plain)).toBe(10);
    const withTools: ChatMessage[] = [...plain.slice(0, 9), { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 't', arguments: '{}' }, { id: 'b', name: 't', arguments: '{}' }] },
      { role: 'tool', content: 'ra', toolCallId: 'a' }, { role: 'tool', content: 'rb', toolCallId: 'b' }, ...plain.slice(12)];
    // The tail would start at index 10 (a tool result): the cut moves back to the assistant call.
    expect(splitPoint(withTools)).toBe(9);
    expect(splitPoint(plain.slice(0, 20))).toBe(0);
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
