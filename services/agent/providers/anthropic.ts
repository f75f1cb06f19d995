// Anthropic Messages through the official SDK, streaming. Cache breakpoints (at most 4): the
// static prefix (first system block), the end of the system prompt, and the last 2 messages.
import Anthropic from '@anthropic-ai/sdk';
import type { ChatMessage, ChatProvider, Completion, CompletionRequest, ToolCall, Usage } from '../messages.js';
import { estimatedUsage, optionalCount, tokenCount } from './usage-counts.js';
import { isLocalURL, opened, staleTimeoutMs, streamCompletion, type StreamLimits } from './stream-watchdog.js';

export interface AnthropicProviderOptions {
  apiKey: string;
  baseURL?: string;
  /** Bound on one whole request, the streamed answer included (HERMES_MODEL_TIMEOUT_SECONDS). */
  timeoutMs: number;
  staleMs?: number;
}

type Block = Anthropic.Messages.ContentBlockParam;
type MessageParam = Anthropic.Messages.MessageParam;
type SystemBlock = Anthropic.Messages.TextBlockParam;
const ephemeral = { type: 'ephemeral' as const };
const DEFAULT_MAX_TOKENS = 4_096;

function parseInput(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function blocksOf(m: ChatMessage): Block[] {
  if (m.role === 'tool') return [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: m.content }];
  const blocks: Block[] = m.content ? [{ type: 'text', text: m.content }] : [];
  for (const c of m.toolCalls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: parseInput(c.arguments) });
  return blocks;
}

/** Internal messages → Anthropic's system blocks + alternating messages, with cache breakpoints. */
export function toAnthropic(messages: ChatMessage[]): { system: SystemBlock[]; messages: MessageParam[] } {
  const system: SystemBlock[] = messages.filter((m) => m.role === 'system' && m.content).map((m) => ({ type: 'text', text: m.content }));
  const out: MessageParam[] = [];
  for (const m of messages) {
    if (m.role === 'system') continue;
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const blocks = blocksOf(m);
    if (!blocks.length) continue;
    const last = out[out.length - 1];
    if (last && last.role === role) (last.content as Block[]).push(...blocks);
    else out.push({ role, content: blocks });
  }
  if (system.length) {
    system[0]!.cache_control = ephemeral;
    system[system.length - 1]!.cache_control = ephemeral;
  }
  for (const m of out.slice(-2)) {
    const blocks = m.content as Block[];
    const b = blocks[blocks.length - 1] as Block & { cache_control?: unknown };
    if (b.type !== 'thinking' && b.type !== 'redacted_thinking') b.cache_control = ephemeral;
  }
  return { system, messages: out };
}

export class AnthropicProvider implements ChatProvider {
  readonly name = 'anthropic';
  readonly local: boolean;
  private readonly client: Anthropic;
  private readonly limits: StreamLimits;

  constructor(opts: AnthropicProviderOptions) {
    this.local = isLocalURL(opts.baseURL);
    this.limits = { staleMs: opts.staleMs ?? staleTimeoutMs(this.local), totalMs: opts.timeoutMs };
    this.client = new Anthropic({ apiKey: opts.apiKey, ...(opts.baseURL ? { baseURL: opts.baseURL } : {}), maxRetries: 0, timeout: opts.timeoutMs });
  }

  complete(req: CompletionRequest): Promise<Completion> {
    const { system, messages } = toAnthropic(req.messages);
    return streamCompletion(req, this.limits, (signal) => opened(this.client.messages.create({
      model: req.model,
      max_tokens: req.maxOutputTokens ?? DEFAULT_MAX_TOKENS,
      messages,
      stream: true,
      ...(system.length ? { system } : {}),
      ...(req.tools?.length ? { tools: req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters as Anthropic.Messages.Tool.InputSchema })) } : {}),
      ...(req.temperature !== undefined ? { temperature: Math.min(req.temperature, 1) } : {}),
    }, { signal, ...(req.headers ? { headers: req.headers } : {}) })), new EventAccumulator(req));
  }
}

/** Folds stream events into one completion: text (announced as it comes), thinking, tool_use, usage (estimated when none is readable). */
class EventAccumulator {
  private text = '';
  private reasoning = '';
  private finishReason = 'stop';
  /** Counts as read from message_start (and message_delta's output); undefined: not readable (yet). */
  private inputTokens: number | undefined;
  private outputTokens: number | undefined;
  private cacheReadTokens = 0;
  private cacheWriteTokens = 0;
  private readonly calls = new Map<number, ToolCall>();
  constructor(private readonly req: CompletionRequest) {}

  add(ev: Anthropic.Messages.RawMessageStreamEvent): void {
    switch (ev.type) {
      case 'message_start': return this.start(ev.message.usage);
      case 'content_block_start':
        if (ev.content_block.type === 'tool_use') this.calls.set(ev.index, { id: ev.content_block.id, name: ev.content_block.name, arguments: '' });
        return;
      case 'content_block_delta': return this.delta(ev.index, ev.delta);
      case 'message_delta':
        if (ev.delta.stop_reason) this.finishReason = ev.delta.stop_reason;
        if (ev.usage?.output_tokens !== undefined) this.outputTokens = tokenCount(ev.usage.output_tokens);
        return;
      default:
        return;
    }
  }

  private start(u: Anthropic.Messages.Usage | undefined): void {
    this.inputTokens = tokenCount(u?.input_tokens);
    this.outputTokens = tokenCount(u?.output_tokens);
    this.cacheReadTokens = optionalCount(u?.cache_read_input_tokens);
    this.cacheWriteTokens = optionalCount(u?.cache_creation_input_tokens);
  }

  private usage(done: Omit<Completion, 'usage'>): Usage {
    if (this.inputTokens === undefined || this.outputTokens === undefined) return estimatedUsage(this.req, done);
    return { inputTokens: this.inputTokens, outputTokens: this.outputTokens, cacheReadTokens: this.cacheReadTokens, cacheWriteTokens: this.cacheWriteTokens, reasoningTokens: 0 };
  }

  private delta(index: number, d: Anthropic.Messages.RawContentBlockDelta): void {
    if (d.type === 'text_delta') {
      if (typeof d.text !== 'string') return;
      this.text += d.text;
      this.req.onDelta?.(d.text);
    } else if (d.type === 'input_json_delta') {
      const c = this.calls.get(index);
      if (c && typeof d.partial_json === 'string') c.arguments += d.partial_json;
    } else if (d.type === 'thinking_delta') {
      if (typeof d.thinking === 'string') this.reasoning += d.thinking;
    }
  }

  result(): Completion {
    const toolCalls = [...this.calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => ({ ...c, arguments: c.arguments || '{}' }));
    const done = { text: this.text, finishReason: this.finishReason, toolCalls, ...(this.reasoning ? { reasoning: this.reasoning } : {}) };
    return { ...done, usage: this.usage(done) };
  }
}
