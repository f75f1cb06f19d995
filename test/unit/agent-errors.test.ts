import { describe, expect, it } from 'vitest';
import { backoffMs, classifyError, historyFromTranscript, retryAfterMs, StreamError, UNKNOWN_EFFECT } from '../../services/agent/index.js';

const http = (status: number, message = 'x', headers: Record<string, string> = {}) => Object.assign(new Error(message), { status, headers });

describe('error classification', () => {
  it.each([
    [401, 'auth', { retryable: false, shouldRotateCredential: true, shouldFallback: true }],
    [402, 'billing', { retryable: false, shouldRotateCredential: true, shouldFallback: true }],
    [408, 'timeout', { retryable: true, shouldFallback: true }],
    [413, 'payload_too_large', { retryable: false, shouldCompress: true }],
    [429, 'rate_limit', { retryable: true, shouldRotateCredential: true }],
    [500, 'server_error', { retryable: true }],
    [502, 'server_error', { retryable: true }],
    [503, 'overloaded', { retryable: true }],
    [529, 'overloaded', { retryable: true }],
    [400, 'bad_request', { retryable: false, shouldFallback: false }],
  ] as const)('HTTP %i → %s', (status, reason, flags) => {
    const c = classifyError(http(status));
    expect(c.reason).toBe(reason);
    expect(c.status).toBe(status);
    expect(c).toMatchObject(flags);
  });

  it('recognises context overflow, content policy, quota-as-429 and malformed bodies', () => {
    expect(classifyError(http(400, "This model's maximum context length is 8192 tokens"))).toMatchObject({ reason: 'context_overflow', shouldCompress: true, retryable: false });
    expect(classifyError(http(400, 'Your request was rejected by our content policy'))).toMatchObject({ reason: 'content_policy', retryable: false, shouldFallback: false });
    expect(classifyError(http(429, 'You exceeded your current quota (insufficient_quota)'))).toMatchObject({ reason: 'billing', retryable: false });
    expect(classifyError(new SyntaxError('Unexpected token < in JSON'))).toMatchObject({ reason: 'malformed', retryable: true });
    expect(classifyError(new StreamError('stream stale', true))).toMatchObject({ reason: 'stream', retryable: true });
  });

  it('honours Retry-After in seconds, ms and HTTP dates, capped at 600 s', () => {
    expect(classifyError(http(429, 'slow down', { 'retry-after': '7' })).retryAfterMs).toBe(7_000);
    expect(retryAfterMs({ 'retry-after-ms': '1500' })).toBe(1_500);
    expect(retryAfterMs({ 'retry-after': '99999' })).toBe(600_000);
    const now = Date.parse('2026-12-02T12:00:00Z');
    expect(retryAfterMs({ 'retry-after': 'Wed, 02 Dec 2026 12:00:30 GMT' }, now)).toBe(30_000);
  });

  it('backs off min(2·2^(n-1), 60) s plus at most 50 % jitter', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffMs(n, 0))).toEqual([2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
    expect(backoffMs(1, 0.999)).toBeGreaterThan(2_900);
    expect(backoffMs(1, 0.999)).toBeLessThanOrEqual(3_000);
    expect(backoffMs(3, 0.5, 12_000)).toBe(12_000);
  });
});

describe('transcript replay', () => {
  it('answers tool calls without a recorded result as effect UNKNOWN and drops orphan results', () => {
    const h = historyFromTranscript([
      { role: 'tool', content: 'orphan', toolCalls: null, toolCallId: 'gone' },
      { role: 'user', content: 'do it', toolCalls: null, toolCallId: null },
      { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 'todo', arguments: '{}' }, { id: 'b', name: 'todo', arguments: '{}' }], toolCallId: null },
      { role: 'tool', content: 'done a', toolCalls: null, toolCallId: 'a' },
      { role: 'user', content: 'next', toolCalls: null, toolCallId: null },
    ]);
    expect(h.map((m) => [m.role, m.toolCallId ?? null, m.content])).toEqual([
      ['user', null, 'do it'],
      ['assistant', null, ''],
      ['tool', 'a', 'done a'],
      ['tool', 'b', UNKNOWN_EFFECT],
      ['user', null, 'next'],
    ]);
  });
});
