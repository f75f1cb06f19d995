// OpenAI Chat Completions (and any OpenAI-compatible server) through the official SDK.
// SDK-level retries are off: retry policy belongs to the loop, which knows what was delivered.
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ChatMessage, ChatProvider, Completion, CompletionRequest, ToolCall, Usage } from '../messages.js';
import { estimatedUsage, optionalCount, reportedCost, tokenCount } from './usage-counts.js';
import { isLocalURL, opened, staleTimeoutMs, streamCompletion, type StreamLimits } from './stream-watchdog.js';

export interface OpenAIProviderOptions {
  apiKey: string;
  baseURL?: string;
  /** Bound on one whole request, the streamed answer included (HERMES_MODEL_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** No stream data for this long → StreamError (default 180 s, 900 s for local servers). */
  staleMs?: number;
  /** Reported name: "openai" or "openai-compatible". */
  name?: string;
}

/** Chat Completions usage as sent (any server may send anything); `cost` is OpenRouter's (and compatible gateways') reported charge in USD. */
type OpenAIUsage = { prompt_tokens?: unknown; completion_tokens?: unknown; cost?: unknown; prompt_tokens_details?: { cached_tokens?: unknown } | null; completion_tokens_details?: { reasoning_tokens?: unknown } | null };

/** The call's usage, or undefined when its prompt and completion counts are not both readable. */
function toUsage(u: OpenAIUsage): Usage | undefined {
  const input = tokenCount(u.prompt_tokens);
  const output = tokenCount(u.completion_tokens);
  if (input === undefined || output === undefined) return undefined;
  const cost = reportedCost(u.cost);
  return {
    inputTokens: input, outputTokens: output, cacheWriteTokens: 0,
    cacheReadTokens: optionalCount(u.prompt_tokens_details?.cached_tokens),
    reasoningTokens: optionalCount(u.completion_tokens_details?.reasoning_tokens),
    ...(cost !== undefined ? { costUsd: cost } : {}),
  };
}

export function toOpenAIMessages(messages: ChatMessage[]): ChatCompletionMessageParam[] {
  return messages.map((m): ChatCompletionMessageParam => {
    switch (m.role) {
      case 'tool': return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: m.content };
      case 'assistant':
        if (m.toolCalls?.length) {
          return {
            role: 'assistant', content: m.content || null,
            tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
          };
        }
        return { role: 'assistant', content: m.content };
      default: return { role: m.role, content: m.content };
    }
  });
}

type ToolDelta = { index: number; id?: string; function?: { name?: string; arguments?: string } };

export class OpenAIChatProvider implements ChatProvider {
  readonly name: string;
  readonly local: boolean;
  private readonly client: OpenAI;
  private readonly limits: StreamLimits;

  constructor(opts: OpenAIProviderOptions) {
    this.name = opts.name ?? 'openai';
    this.local = isLocalURL(opts.baseURL);
    this.limits = { staleMs: opts.staleMs ?? staleTimeoutMs(this.local), totalMs: opts.timeoutMs };
    this.client = new OpenAI({ apiKey: opts.apiKey, ...(opts.baseURL ? { baseURL: opts.baseURL } : {}), maxRetries: 0, timeout: opts.timeoutMs });
  }

  complete(req: CompletionRequest): Promise<Completion> {
    const tools: ChatCompletionTool[] | undefined = req.tools?.length
      ? req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }))
      : undefined;
    return streamCompletion(req, this.limits, (signal) => opened(this.client.chat.completions.create({
      model: req.model,
      messages: toOpenAIMessages(req.messages),
      stream: true,
      stream_options: { include_usage: true },
      ...(tools ? { tools } : {}),
      ...(req.maxOutputTokens ? { max_completion_tokens: req.maxOutputTokens } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    }, { signal, ...(req.headers ? { headers: req.headers } : {}) })), new ChunkAccumulator(req));
  }
}

type Delta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string; reasoning?: string };

/** Folds stream chunks into one completion: text (announced as it comes), reasoning, tool calls, usage (estimated when none is readable). */
class ChunkAccumulator {
  private text = '';
  private reasoning = '';
  private finishReason = 'stop';
  private usage: Usage | undefined;
  private readonly calls = new Map<number, ToolCall>();
  constructor(private readonly req: CompletionRequest) {}

  add(chunk: OpenAI.Chat.Completions.ChatCompletionChunk): void {
    const choice = chunk.choices?.[0];
    if (chunk.usage) this.usage = toUsage(chunk.usage as OpenAIUsage);
    if (!choice) return;
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    const delta = choice.delta as Delta | undefined;
    if (!delta) return;
    // Fields of the wrong type (a server's bug) are left out rather than stringified into the answer.
    if (typeof delta.content === 'string' && delta.content) {
      this.text += delta.content;
      this.req.onDelta?.(delta.content);
    }
    const reasoning: unknown = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string') this.reasoning += reasoning;
    if (Array.isArray(delta.tool_calls)) for (const tc of delta.tool_calls as ToolDelta[]) this.addToolDelta(tc);
  }

  private addToolDelta(tc: ToolDelta): void {
    if (!tc || typeof tc !== 'object') return;
    const index = typeof tc.index === 'number' ? tc.index : 0; // a server that leaves it out sends one call
    const call = this.calls.get(index) ?? { id: '', name: '', arguments: '' };
    if (typeof tc.id === 'string' && tc.id) call.id = tc.id;
    if (typeof tc.function?.name === 'string') call.name += tc.function.name;
    const args: unknown = tc.function?.arguments;
    // Some OpenAI-compatible servers send the arguments as a JSON object instead of its text.
    if (typeof args === 'string') call.arguments += args;
    else if (args && typeof args === 'object') call.arguments += JSON.stringify(args);
    this.calls.set(index, call);
  }

  result(): Completion {
    // Each call needs an id of its own: its result is matched to it, and providers refuse a
    // history where two calls of one message share an id (some servers send none, or repeat one).
    const seen = new Set<string>();
    const toolCalls = [...this.calls.entries()].sort((a, b) => a[0] - b[0]).map(([i, c]) => {
      let id = c.id || `call_${i}`;
      if (seen.has(id)) id = `${id}_${i}`;
      seen.add(id);
      return { ...c, id };
    });
    const done = { text: this.text, finishReason: this.finishReason, toolCalls, ...(this.reasoning ? { reasoning: this.reasoning } : {}) };
    return { ...done, usage: this.usage ?? estimatedUsage(this.req, done) };
  }
}
