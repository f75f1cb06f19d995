// A text-only turn: system prompt + history → one model call → the final reply. The full agent
// loop (tools, retries, fallback, compression) grows from here; the contract stays: given the
// conversation and a signal, produce a TurnResult and never throw for an expected failure.
import { inSpan, injectTraceContext, type CompiledAgent, type TurnResult } from '../core/index.js';
import { context } from '@opentelemetry/api';
import type { ChatMessage, ChatProvider, Usage } from './messages.js';

export interface TurnInput {
  agent: CompiledAgent;
  provider: ChatProvider;
  /** The session's stored system prompt (built once per session). */
  systemPrompt: string;
  /** Conversation so far, ending with the user's new message. */
  history: ChatMessage[];
  signal: AbortSignal;
  onDelta?: (text: string) => void;
}

/** The stable layer of the prompt for now: identity/persona. Built once per session and stored. */
export function buildSystemPrompt(agent: CompiledAgent): string {
  const persona = agent.persona.trim() || `You are ${agent.agent.name}, a helpful assistant.`;
  return persona;
}

export function describeFailure(err: unknown): { reply: string; error: string } {
  const e = err as { status?: number; message?: string; name?: string };
  const status = typeof e?.status === 'number' ? e.status : undefined;
  const error = `${e?.name ?? 'Error'}${status ? ` ${status}` : ''}: ${e?.message ?? String(err)}`.slice(0, 2_000);
  let reply = 'Sorry — the model could not answer this time. Please try again.';
  if (status === 401 || status === 403) reply = 'Sorry — the model provider refused our credentials. An operator needs to check the API key.';
  else if (status === 402) reply = 'Sorry — the model provider reports a billing problem. An operator needs to check the account.';
  else if (status === 429) reply = 'Sorry — the model provider is rate-limiting us. Please try again in a moment.';
  return { reply, error };
}

export async function runTextTurn(input: TurnInput): Promise<TurnResult & { usage?: Usage }> {
  const messages: ChatMessage[] = [{ role: 'system', content: input.systemPrompt }, ...input.history];
  try {
    const attrs = { 'gen_ai.system': input.provider.name, 'gen_ai.request.model': input.agent.model.model };
    const out = await inSpan('hermes.model_call', attrs, context.active(), () => input.provider.complete({
      model: input.agent.model.model,
      messages,
      signal: input.signal,
      headers: injectTraceContext(),
      ...(input.onDelta ? { onDelta: input.onDelta } : {}),
      ...(input.agent.model.maxOutputTokens ? { maxOutputTokens: input.agent.model.maxOutputTokens } : {}),
      ...(input.agent.model.temperature !== undefined ? { temperature: input.agent.model.temperature } : {}),
    }));
    if (!out.text.trim()) {
      return { outcome: 'failed', reply: 'Sorry — the model returned an empty answer.', error: `empty completion (finish_reason ${out.finishReason})`, usage: out.usage };
    }
    return { outcome: 'completed', reply: out.text, usage: out.usage };
  } catch (err) {
    if (input.signal.aborted) {
      const reason = input.signal.reason instanceof Error ? input.signal.reason.message : String(input.signal.reason ?? 'aborted');
      return { outcome: 'interrupted', reply: `The turn was interrupted (${reason}). Send your message again or /retry.`, error: reason, interrupted: true };
    }
    return { outcome: 'failed', ...describeFailure(err) };
  }
}
