// The internal message format the loop speaks; provider adapters translate at the edge.
// One shape for every provider: roles, text, tool calls, tool results, reasoning and usage.
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  /** Provider-issued id; tool results answer it. */
  id: string;
  name: string;
  /** The raw JSON text the model produced (may be invalid: the loop answers that as a result). */
  arguments: string;
}

export interface ChatMessage {
  role: ChatRole;
  content: string;
  /** Assistant turns that call tools. */
  toolCalls?: ToolCall[];
  /** Tool results: the call they answer. */
  toolCallId?: string;
  /** Tool results: the tool's name (Anthropic and some OpenAI-compatible servers want it). */
  name?: string;
  /** Model reasoning text, when the provider exposes it (kept for the transcript, not re-sent). */
  reasoning?: string;
  /** Transcript sequence number when stored (compression records what a summary covers). */
  seq?: number;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  /** What the provider says the call cost in USD (OpenRouter's `usage.cost`), when it says so. */
  costUsd?: number;
  /** Set when the provider sent no readable counts: the counts are estimated from the call's text. */
  estimated?: true;
}

export const emptyUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
    ...(a.costUsd !== undefined || b.costUsd !== undefined ? { costUsd: (a.costUsd ?? 0) + (b.costUsd ?? 0) } : {}),
    ...(a.estimated || b.estimated ? { estimated: true as const } : {}),
  };
}

/** A tool as the model sees it: name, description, JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface CompletionRequest {
  model: string;
  messages: ChatMessage[];
  signal: AbortSignal;
  tools?: ToolSpec[];
  /** Called with each piece of answer text as it streams. */
  onDelta?: (text: string) => void;
  /** Called for every stream chunk received (liveness: the turn is making progress). */
  onChunk?: () => void;
  maxOutputTokens?: number;
  temperature?: number;
  /** Extra request headers (W3C trace context, so a traced model server joins the trace). */
  headers?: Record<string, string>;
}

export interface Completion {
  text: string;
  finishReason: string;
  usage: Usage;
  toolCalls: ToolCall[];
  reasoning?: string;
}

export interface ChatProvider {
  /** Provider flavour (openai, anthropic, openai-compatible). */
  readonly name: string;
  /** Whether the endpoint is a local server (longer stale-stream timeout). */
  readonly local?: boolean;
  complete(req: CompletionRequest): Promise<Completion>;
}
