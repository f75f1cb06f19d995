// OpenAI Chat Completions (and any OpenAI-compatible server) through the official SDK.
// SDK-level retries are off: retry policy belongs to the loop, which knows what was delivered.
import OpenAI from 'openai';
import type { ChatProvider, Completion, CompletionRequest, Usage } from '../messages.js';
import { emptyUsage } from '../messages.js';

export interface OpenAIProviderOptions {
  apiKey: string;
  baseURL?: string;
  timeoutMs: number;
}

type OpenAIUsage = { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null; completion_tokens_details?: { reasoning_tokens?: number } | null } | null | undefined;

function toUsage(u: OpenAIUsage): Usage {
  const usage = emptyUsage();
  if (!u) return usage;
  usage.inputTokens = u.prompt_tokens ?? 0;
  usage.outputTokens = u.completion_tokens ?? 0;
  usage.cacheReadTokens = u.prompt_tokens_details?.cached_tokens ?? 0;
  usage.reasoningTokens = u.completion_tokens_details?.reasoning_tokens ?? 0;
  return usage;
}

export class OpenAIChatProvider implements ChatProvider {
  readonly name = 'openai';
  private readonly client: OpenAI;

  constructor(opts: OpenAIProviderOptions) {
    this.client = new OpenAI({ apiKey: opts.apiKey, ...(opts.baseURL ? { baseURL: opts.baseURL } : {}), maxRetries: 0, timeout: opts.timeoutMs });
  }

  async complete(req: CompletionRequest): Promise<Completion> {
    const stream = await this.client.chat.completions.create({
      model: req.model,
      messages: req.messages,
      stream: true,
      stream_options: { include_usage: true },
      ...(req.maxOutputTokens ? { max_completion_tokens: req.maxOutputTokens } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
    }, { signal: req.signal, ...(req.headers ? { headers: req.headers } : {}) });
    let text = '';
    let finishReason = 'stop';
    let usage = emptyUsage();
    for await (const chunk of stream) {
      const choice = chunk.choices?.[0];
      const delta = choice?.delta?.content;
      if (delta) {
        text += delta;
        req.onDelta?.(delta);
      }
      if (choice?.finish_reason) finishReason = choice.finish_reason;
      if (chunk.usage) usage = toUsage(chunk.usage);
    }
    return { text, finishReason, usage };
  }
}
