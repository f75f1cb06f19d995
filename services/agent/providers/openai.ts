// OpenAI Chat Completions (and any OpenAI-compatible server) through the official SDK.
// SDK-level retries are off: retry policy belongs to the loop, which knows what was delivered.
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ChatMessage, ChatProvider, Completion, CompletionRequest, ToolCall, Usage } from '../messages.js';
import { emptyUsage } from '../messages.js';
import { isLocalURL, staleTimeoutMs, streamCompletion } from './stream-watchdog.js';

export interface OpenAIProviderOptions {
  apiKey: string;
  baseURL?: string;
  timeoutMs: number;
  /** No stream data for this long → StreamError (default 180 s, 900 s for local servers). */
  staleMs?: number;
  /** Reported name: "openai" or "openai-compatible". */
  name?: string;
}

/** Chat Completions usage; `cost` is OpenRouter's (and compatible gateways') reported charge in USD. */
type OpenAIUsage = { prompt_tokens?: number; completion_tokens?: number; cost?: unknown; prompt_tokens_details?: { cached_tokens?: number } | null; completion_tokens_details?: { reasoning_tokens?: number } | null } | null | undefined;

function toUsage(u: OpenAIUsage): Usage {
  const usage = emptyUsage();
  if (!u) return usage;
  usage.inputTokens = u.prompt_tokens ?? 0;
  usage.outputTokens = u.completion_tokens ?? 0;
  usage.cacheReadTokens = u.prompt_tokens_details?.cached_tokens ?? 0;
  usage.reasoningTokens = u.completion_tokens_details?.reasoning_tokens ?? 0;
  if (typeof u.cost === 'number' && Number.isFinite(u.cost) && u.cost >= 0) usage.costUsd = u.cost;
  return usage;
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
  private readonly staleMs: number;

  constructor(opts: OpenAIProviderOptions) {
    this.name = opts.name ?? 'openai';
    this.local = isLocalURL(opts.baseURL);
    this.staleMs = opts.staleMs ?? staleTimeoutMs(this.local);
    this.client = new OpenAI({ apiKey: opts.apiKey, ...(opts.baseURL ? { baseURL: opts.baseURL } : {}), maxRetries: 0, timeout: opts.timeoutMs });
  }

  complete(req: CompletionRequest): Promise<Completion> {
    const tools: ChatCompletionTool[] | undefined = req.tools?.length
      ? req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }))
      : undefined;
    return streamCompletion(req, this.staleMs, (signal) => this.client.chat.completions.create({
      model: req.model,
      messages: toOpenAIMessages(req.messages),
      stream: true,
      stream_options: { include_usage: true },
      ...(tools ? { tools } : {}),
      ...(req.maxOutputTokens ? { max_completion_tokens: req.maxOutputTokens } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    }, { signal, ...(req.headers ? { headers: req.headers } : {}) }), new ChunkAccumulator(req.onDelta));
  }
}

type Delta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string; reasoning?: string };

/** Folds stream chunks into one completion: text (announced as it comes), reasoning, tool calls, usage. */
class ChunkAccumulator {
  private text = '';
  private reasoning = '';
  private finishReason = 'stop';
  private usage = emptyUsage();
  private readonly calls = new Map<number, ToolCall>();
  constructor(private readonly onDelta?: (text: string) => void) {}

  add(chunk: OpenAI.Chat.Completions.ChatCompletionChunk): void {
    const choice = chunk.choices?.[0];
    if (chunk.usage) this.usage = toUsage(chunk.usage);
    if (!choice) return;
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const delta = choice.delta as Delta | undefined;
    if (!delta) return;
    if (delta.content) {
      this.text += delta.content;
      this.onDelta?.(delta.content);
    }
    this.reasoning += delta.reasoning_content ?? delta.reasoning ?? '';
    for (const tc of (delta.tool_calls ?? []) as ToolDelta[]) this.addToolDelta(tc);
  }

  private addToolDelta(tc: ToolDelta): void {
    const call = this.calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
    if (tc.id) call.id = tc.id;
    call.name += tc.function?.name ?? '';
    call.arguments += tc.function?.arguments ?? '';
    this.calls.set(tc.index, call);
  }

  result(): Completion {
    const toolCalls = [...this.calls.entries()].sort((a, b) => a[0] - b[0]).map(([i, c]) => ({ ...c, id: c.id || `call_${i}` }));
    return { text: this.text, finishReason: this.finishReason, usage: this.usage, toolCalls, ...(this.reasoning ? { reasoning: this.reasoning } : {}) };
  }
}
