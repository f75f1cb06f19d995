// The internal message format the loop speaks; provider adapters translate at the edge.
export type ChatRole = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
}

export const emptyUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });

export interface CompletionRequest {
  model: string;
  messages: ChatMessage[];
  signal: AbortSignal;
  /** Called with each piece of answer text as it streams. */
  onDelta?: (text: string) => void;
  maxOutputTokens?: number;
  temperature?: number;
  /** Extra request headers (W3C trace context, so a traced model server joins the trace). */
  headers?: Record<string, string>;
}

export interface Completion {
  text: string;
  finishReason: string;
  usage: Usage;
}

export interface ChatProvider {
  readonly name: string;
  complete(req: CompletionRequest): Promise<Completion>;
}
