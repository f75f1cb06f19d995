// OpenAI response objects: `chat.completion`, `chat.completion.chunk`, and the error a finished
// turn maps to (failed → 502 with the reason; unknown → 502 "interrupted, not re-run").
import { HermesError, type TurnUsage } from '../../core/index.js';
import type { TurnEnd } from '../waiter.js';

export interface CompletionIds {
  id: string;
  model: string;
  created: number;
}

export const completionIds = (admissionId: string, model: string): CompletionIds =>
  ({ id: `chatcmpl-${admissionId}`, model, created: Math.floor(Date.now() / 1000) });

/** The reply text of a turn that answered, or the error to answer instead. */
export function replyText(end: TurnEnd): string {
  const { admission, reply } = end;
  if (admission.state === 'unknown') throw new HermesError('HERMES_TURN_INTERRUPTED', `Admission ${admission.id}: send /retry in this conversation to run it again.`);
  if (admission.outcome === 'completed' || admission.outcome === 'interrupted') return reply?.content ?? '';
  const reason = reply?.content ?? `the turn ended as "${admission.outcome}"`;
  throw new HermesError('HERMES_TURN_FAILED', reason);
}

export function completion(ids: CompletionIds, content: string, usage: TurnUsage = { inputTokens: 0, outputTokens: 0 }) {
  return {
    id: ids.id,
    object: 'chat.completion',
    created: ids.created,
    model: ids.model,
    choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens },
  };
}

export function chunk(ids: CompletionIds, delta: { role?: 'assistant'; content?: string }, finish: 'stop' | null = null) {
  return {
    id: ids.id,
    object: 'chat.completion.chunk',
    created: ids.created,
    model: ids.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

/**
 * What the client still lacks after seeing `streamed`: the rest when it is a prefix of the final
 * text, nothing when it already holds it, else (a delta went missing mid-stream) the whole
 * final text after a blank line, so the answer is always complete.
 */
export function missingText(streamed: string, final: string): string {
  if (final.startsWith(streamed)) return final.slice(streamed.length);
  if (streamed.includes(final)) return '';
  return `\n\n${final}`;
}
