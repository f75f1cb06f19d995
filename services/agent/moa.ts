// Mixture of Agents as a provider: one model call of the loop asks a preset's reference models in
// parallel (at most 8) for their answer to the conversation's latest request — the "advisory
// view", at most 4 000 characters, no tools — and then the aggregator model answers the real
// request (tools and all) with their answers as advice. As in Hermes the references are asked
// once per user turn by default (their answers cached by the advisory view's hash) or before every
// aggregator call (`per_iteration`). A failed reference is left out; the aggregator's errors are
// the call's errors (the loop's retries and fallbacks apply to it). Every call is returned with
// its route, so each is accounted on its own (task `moa_reference` for references).
import { createHash } from 'node:crypto';
import { MOA_MAX_REFERENCES, withDeadline } from '../core/index.js';
import { systemClock, type Clock } from './clock.js';
import { CredentialPool, type CooldownBook } from './credentials.js';
import type { ChatMessage, ChatProvider, Completion, CompletionRequest } from './messages.js';
import { addUsage, emptyUsage } from './messages.js';
import { callModel, type ModelRoute, type RetryPolicy } from './model-call.js';

/** Characters of the advisory view at most (Hermes' advisory budget). */
export const ADVISORY_VIEW_CHARS = 4_000;

export interface MoaPresetRoutes {
  name: string;
  references: ModelRoute[];
  aggregator: ModelRoute;
  referenceTemperature: number;
  aggregatorTemperature: number;
  /** Output tokens of each reference answer at most. */
  maxTokens: number;
  fanout: 'user_turn' | 'per_iteration';
}

/** One model call a Mixture-of-Agents call made, with the route that priced it. */
export interface MoaCall {
  completion: Completion;
  route: ModelRoute;
  /** A reference answer (accounted as `moa_reference`), or the aggregator's (the loop's task). */
  reference: boolean;
}

/** The calls behind a completion of a Mixture-of-Agents route; undefined for any other completion. */
export function moaCallsOf(done: Completion): readonly MoaCall[] | undefined {
  return (done as Completion & { moaCalls?: MoaCall[] }).moaCalls;
}

/** References retry less than the answer: one failed reference only costs its advice. */
const referencePolicy: RetryPolicy = { apiRetries: 1, streamRetryMs: [1_000], ladderMs: [] };

const REFERENCE_SYSTEM = 'You are one of several expert models asked the same request. Answer it as well as you can, concisely and concretely; say when you are unsure. Your answer is advice for another model that writes the final reply.';

function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const half = Math.floor((max - 20) / 2);
  return `${text.slice(0, half)}\n[… cut …]\n${text.slice(text.length - half)}`;
}

/**
 * What the references see: the latest user request and — asked before every aggregator call
 * (`withWork`) — the turn's work since (the assistant's text and tool results, newest kept),
 * within {@link ADVISORY_VIEW_CHARS}.
 */
export function advisoryView(messages: readonly ChatMessage[], withWork = false): string {
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const request = lastUser >= 0 ? messages[lastUser]!.content : '';
  const work = !withWork ? '' : messages.slice(lastUser + 1).filter((m) => m.content.trim())
    .map((m) => (m.role === 'tool' ? `[tool result${m.name ? ` ${m.name}` : ''}] ${m.content}` : `[assistant] ${m.content}`)).join('\n');
  if (!work) return cut(request, ADVISORY_VIEW_CHARS);
  const head = cut(request, Math.floor(ADVISORY_VIEW_CHARS / 2));
  const room = ADVISORY_VIEW_CHARS - head.length - 20;
  return `${head}\n\nWork so far:\n${work.length > room ? work.slice(work.length - room) : work}`;
}

interface Reference {
  model: string;
  text: string;
}

function adviceMessage(refs: readonly Reference[]): ChatMessage {
  const body = refs.map((r, i) => `[Reference ${i + 1}: ${r.model}]\n${r.text.trim()}`).join('\n\n');
  return {
    role: 'system',
    content: `Advice from ${refs.length} reference model${refs.length === 1 ? '' : 's'} (Mixture of Agents) on the latest request. Weigh it: keep what is right, drop what is wrong, and answer in your own words; do not mention the reference models unless asked.\n\n${body}`,
  };
}

/** The request's messages with the advice after the leading system messages. */
function withAdvice(messages: readonly ChatMessage[], refs: readonly Reference[]): ChatMessage[] {
  if (!refs.length) return [...messages];
  const lead = messages.findIndex((m) => m.role !== 'system');
  const at = lead < 0 ? messages.length : lead;
  return [...messages.slice(0, at), adviceMessage(refs), ...messages.slice(at)];
}

/**
 * How long one reference may take, its retry included: past it the reference is left out like one
 * that failed, so a reference that hangs never holds the turn (the aggregator answers with the
 * others' advice). Well under the turn's 600 s liveness watchdog.
 */
export const MOA_REFERENCE_TIMEOUT_MS = 120_000;

export interface MoaProviderOptions {
  clock?: Clock;
  cooldowns?: CooldownBook;
  /** @defaultValue {@link MOA_REFERENCE_TIMEOUT_MS} */
  referenceTimeoutMs?: number;
}

/** One Mixture-of-Agents preset as a provider. Keep one per turn: the advice cache is the turn's. */
export class MoaProvider implements ChatProvider {
  readonly name = 'moa';
  private readonly advice = new Map<string, Reference[]>();
  /** Calls made by attempts that failed later (the aggregator): accounted with the next success. */
  private pending: MoaCall[] = [];

  constructor(private readonly preset: MoaPresetRoutes, private readonly opts: MoaProviderOptions = {}) {
    if (preset.references.length < 1 || preset.references.length > MOA_MAX_REFERENCES) {
      throw new Error(`a Mixture-of-Agents preset needs 1 to ${MOA_MAX_REFERENCES} reference models, got ${preset.references.length}`);
    }
  }

  async complete(req: CompletionRequest): Promise<Completion> {
    const refs = await this.references(req);
    const { aggregator } = this.preset;
    const done = await aggregator.pool.current().complete({
      ...req, model: aggregator.model, messages: withAdvice(req.messages, refs), temperature: this.preset.aggregatorTemperature,
    });
    const calls = [...this.pending.splice(0), { completion: done, route: aggregator, reference: false }];
    const usage = calls.reduce((u, c) => addUsage(u, c.completion.usage), emptyUsage());
    return Object.assign({ ...done, usage }, { moaCalls: calls });
  }

  /** The references' answers to the advisory view: cached per view under `user_turn`. */
  private async references(req: CompletionRequest): Promise<Reference[]> {
    // Once per user turn: the view is the request alone, so the turn's later calls find its advice.
    const perIteration = this.preset.fanout === 'per_iteration';
    const view = advisoryView(req.messages, perIteration);
    const key = createHash('sha256').update(view).digest('hex');
    const cached = perIteration ? undefined : this.advice.get(key);
    if (cached) return cached;
    const messages: ChatMessage[] = [{ role: 'system', content: REFERENCE_SYSTEM }, { role: 'user', content: view }];
    const timeoutMs = this.opts.referenceTimeoutMs ?? MOA_REFERENCE_TIMEOUT_MS;
    const answers = await Promise.all(this.preset.references.map(async (route) => {
      const { signal, clear } = withDeadline(req.signal, timeoutMs, `the reference model did not answer within ${timeoutMs} ms`);
      const res = await callModel({
        routes: [route], policy: referencePolicy, clock: this.opts.clock ?? systemClock, ...(this.opts.cooldowns ? { cooldowns: this.opts.cooldowns } : {}),
        request: { messages, signal, maxOutputTokens: this.preset.maxTokens, temperature: this.preset.referenceTemperature, ...(req.headers ? { headers: req.headers } : {}), ...(req.onChunk ? { onChunk: req.onChunk } : {}) },
      }).catch(() => undefined).finally(clear); // a reference cut at its deadline is left out like a failed one
      if (!res?.ok) return undefined;
      this.pending.push({ completion: res.completion, route, reference: true });
      return res.completion.text.trim() ? { model: route.model, text: res.completion.text } : undefined;
    }));
    req.signal.throwIfAborted();
    const refs = answers.filter((a): a is Reference => a !== undefined);
    this.advice.set(key, refs);
    return refs;
  }
}

/** A route whose one "key" is the preset; `members` are the routes its calls are priced by (references, then the aggregator). */
export function moaRoute(key: string, preset: MoaPresetRoutes, opts: MoaProviderOptions = {}): ModelRoute {
  return { key, model: preset.name, pool: new CredentialPool(key, [new MoaProvider(preset, opts)]), members: [...preset.references, preset.aggregator] };
}

/**
 * The routes with each Mixture-of-Agents route replaced by its aggregator: for calls that need one
 * model, not advice (summaries, command reviews, the background review).
 */
export function directRoutes(routes: readonly ModelRoute[]): ModelRoute[] {
  return routes.map((r) => r.members?.at(-1) ?? r);
}

/** Every route whose calls a turn may pay for: members of Mixture-of-Agents routes instead of the route. */
export function pricedRoutes(routes: readonly ModelRoute[]): ModelRoute[] {
  return routes.flatMap((r) => (r.members ? [...r.members] : [r]));
}
