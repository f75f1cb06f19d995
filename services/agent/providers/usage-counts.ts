// Token counts as a provider reports them, read defensively: the provider is whatever server a
// Profile's baseURL names, and its counts price the call and feed the spend caps. A count that is
// not a whole number from 0 to MAX_TOKENS_PER_CALL is unreadable; negative counts would lower the
// recorded spend, and non-numbers used to fail a turn whose answer had come. A call without
// readable counts (none sent, or garbage) is priced on counts estimated from its text instead, so
// it still reaches the caps.
import { estimateTokens } from '../compression.js';
import type { Completion, CompletionRequest, Usage } from '../messages.js';

/** More than any model reads or writes in one call: a larger count is garbage. */
export const MAX_TOKENS_PER_CALL = 10_000_000;

/** `v` as a token count, or undefined when it is not one. */
export function tokenCount(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= MAX_TOKENS_PER_CALL ? v : undefined;
}

/** An optional count (cache, reasoning): unreadable or absent counts as 0 — no discount is taken on garbage. */
export const optionalCount = (v: unknown): number => tokenCount(v) ?? 0;

/** A reported charge in USD: a finite, non-negative number, else none. */
export const reportedCost = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

/**
 * Usage estimated at 4 characters a token: the request (messages and tool schemas) as input, the
 * answer (text, reasoning, tool calls) as output. Marked `estimated`.
 */
export function estimatedUsage(req: Pick<CompletionRequest, 'messages' | 'tools'>, done: Pick<Completion, 'text' | 'reasoning' | 'toolCalls'>): Usage {
  const schemaChars = req.tools?.length ? JSON.stringify(req.tools).length : 0;
  const outputChars = done.text.length + (done.reasoning?.length ?? 0) + done.toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, 0);
  return {
    inputTokens: Math.min(MAX_TOKENS_PER_CALL, estimateTokens(req.messages) + Math.ceil(schemaChars / 4)),
    outputTokens: Math.min(MAX_TOKENS_PER_CALL, Math.ceil(outputChars / 4)),
    cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0,
    estimated: true,
  };
}
