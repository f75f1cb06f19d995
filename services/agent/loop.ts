// The agent loop: call the model, persist what it asked for, run the tools, feed the results
// back, until the model answers in text or a budget ends the turn. Expected failures end as a
// TurnResult with words the user can act on; the loop never throws for them.
import { context } from '@opentelemetry/api';
import { commandWord, inSpan, injectTraceContext, type TurnResult, type UsageTask } from '../core/index.js';
import { abortReason, systemClock, type Clock } from './clock.js';
import type { CooldownBook } from './credentials.js';
import { compress, estimateTokens, MAX_ATTEMPTS, SummaryRefused, thresholdTokens, type SummaryCooldown } from './compression.js';
import type { TurnControl } from './control.js';
import { userMessageFor } from './errors.js';
import { addUsage, emptyUsage, type ChatMessage, type Completion, type CompletionRequest, type ToolSpec, type Usage } from './messages.js';
import { callModel, type ModelCallResult, type ModelRoute, type RetryPolicy } from './model-call.js';
import { runToolBatch, type BatchHooks, type EffectDisposition, type ToolOutcome } from './tools/execute.js';
import { uniqueCallIds } from './tool-call-ids.js';
import { READ_TOOL_RESULT, ResultBudget, type ToolResultStore } from './tools/results.js';
import { readToolResultTool } from './tools/stored-results.js';
import { haltReply, ToolLoopGuard, type GuardSettings } from './tools/guardrails.js';
import { toolSpec, type CommandGuard, type Tool, type ToolContext } from './tools/registry.js';

export interface LoopPersistence {
  /** Commits the assistant message carrying tool calls, before any of them runs; its sequence number. */
  assistant(msg: ChatMessage, usage: Usage): Promise<number | void>;
  /** Commits one tool result with its effect disposition; its sequence number. */
  toolResult(msg: ChatMessage, disposition: EffectDisposition): Promise<number | void>;
  /** Records a compression (summary + last sequence it covers); the prompt is rebuilt after it. */
  compressed?(summary: string, coversSeq: number | undefined): Promise<void>;
  /**
   * The session's spill-over storage: results over a limit are stored in full and the model gets
   * a preview block plus `read_tool_result`. Without it they are cut with a notice.
   */
  results?: ToolResultStore;
}

export interface CompressionOptions {
  /** Context window in tokens (default 128K). */
  contextWindow?: number;
  /** Token budget of the verbatim tail (default 20 000, capped at 0.20 of the threshold). */
  keepRecentTokens?: number;
  cooldown: SummaryCooldown;
}

export interface LoopInput {
  sessionId: string;
  /** Primary model first, then the fallback chain. */
  routes: ModelRoute[];
  /** Routes of summary calls (compression) when they differ from `routes` (a Mixture-of-Agents model summarises with its aggregator). */
  summaryRoutes?: ModelRoute[];
  explicitModel?: boolean;
  /** The stored system prompt (its layers as separate system messages keep cache breakpoints stable). */
  system: ChatMessage[];
  /** Conversation so far, ending with the user's new message. */
  history: ChatMessage[];
  tools: Tool[];
  /** What the tools act through (sandbox, guard, checkpoint, todos), passed into every ToolContext. */
  toolContext?: Pick<ToolContext, 'sandbox' | 'guard' | 'checkpoint' | 'todos' | 'memory' | 'recall' | 'skills' | 'web' | 'clarify' | 'messaging' | 'codeExecution'>;
  signal: AbortSignal;
  persist: LoopPersistence;
  /** Iteration budget (model calls per turn); undefined = unlimited. */
  maxIterations?: number;
  /**
   * Request-only notes, appended to the last message of each request (never stored, never in the
   * cached prefix). The iteration-budget warnings are added to these by the loop itself.
   */
  ephemeral?: () => string[];
  /**
   * Checked before each model call — the answer's and a compression summary's: a reason refuses
   * the call (spend caps); nothing is sent. A refused summary falls back to the digest.
   */
  beforeCall?: () => Promise<string | undefined>;
  /** After each successful call, answer (`turn`) or summary (`compression`): per-call usage accounting. */
  onCall?: (completion: Completion, route: ModelRoute, task: UsageTask) => Promise<void>;
  onDelta?: (text: string) => void;
  /**
   * Liveness: called on every sign of progress — a model stream chunk, a model call finishing,
   * a tool starting or finishing, a message persisted (the worker's ProgressWatchdog).
   */
  onProgress?: () => void;
  /** Steer and redirect while the turn runs (stop arrives through `signal`). */
  control?: TurnControl;
  /** Compress when over the threshold or when the provider reports a context overflow. */
  compression?: CompressionOptions;
  maxOutputTokens?: number;
  temperature?: number;
  /**
   * Unattended platform (cron): nobody watches this turn, so the tool-loop guard's blocks and
   * halts end it. @defaultValue false
   */
  unattended?: boolean;
  /** The chat platform of the turn: texts that name a command write it as users there do (`!retry` on Slack). */
  platform?: string;
  /** Tool-loop guard thresholds; SPEC defaults (`GUARD_DEFAULTS`) for the ones not given. */
  guardrails?: Partial<GuardSettings>;
  /**
   * Deadline of each tool step (a parallel group, or one call run in order). Its own clock, not
   * `clock`: a test clock whose sleeps return at once would end every tool call at once.
   * @defaultValue 420 000 ms on `systemClock`
   */
  toolTimeout?: { ms?: number; clock?: Clock };
  clock?: Clock;
  cooldowns?: CooldownBook;
  policy?: RetryPolicy;
  /** The approval guard every command passes (ToolContext.guard); absent = tools may run no command. */
  guard?: CommandGuard;
}

export interface LoopResult extends TurnResult {
  usage: Usage;
  iterations: number;
}

const MAX_INVALID_IN_A_ROW = 3;

function interrupted(input: Pick<LoopInput, 'signal' | 'platform' | 'unattended'>, partial: string, usage: Usage, iterations: number): LoopResult {
  const reason = abortReason(input.signal).message;
  // Unattended (a cron run): nobody sent a message to send again, and nobody can /retry it.
  const reply = partial.trim()
    ? `${partial}\n\n[interrupted: ${reason}]`
    : input.unattended ? `The run was interrupted (${reason}).`
      : `The turn was interrupted (${reason}). Send your message again or ${commandWord(input.platform, 'retry')}.`;
  return { outcome: 'interrupted', reply, error: reason, interrupted: true, partial: partial.trim() ? partial : '', usage, iterations };
}

function failed(res: Extract<ModelCallResult, { ok: false }>, input: LoopInput, usage: Usage, iterations: number): LoopResult {
  const c = res.error;
  const model = res.route.model;
  const explicit = input.explicitModel && input.routes.length > 1 ? ` You chose ${model} explicitly, so I did not switch to a fallback model.` : '';
  const error = `${c.reason}${c.status ? ` ${c.status}` : ''} from ${model}: ${c.message}`.slice(0, 2_000);
  return { outcome: 'failed', reply: userMessageFor(c, model, input.platform, input.unattended) + explicit, error, usage, iterations };
}

function optional(input: LoopInput): Partial<CompletionRequest> {
  return {
    ...(input.maxOutputTokens ? { maxOutputTokens: input.maxOutputTokens } : {}),
    ...(input.temperature !== undefined ? { temperature: input.temperature } : {}),
  };
}

/** One turn's loop state: the growing message list, usage and the invalid-call streak. */
class TurnLoop {
  private readonly clock: Clock;
  private readonly tools: Map<string, Tool>;
  private readonly specs: ToolSpec[];
  private readonly messages: ChatMessage[];
  private usage = emptyUsage();
  private invalidInARow = 0;
  private partial = '';
  private compressions = 0;
  /** SPEC: ≤ 100 000 characters per result, ≤ 200 000 per turn; the rest are stored, previewed. */
  private readonly budget: ResultBudget;
  /** SPEC: tool-loop guardrails over the turn's last 64 calls. */
  private readonly guard: ToolLoopGuard;
  private readonly progress: () => void;

  constructor(private readonly input: LoopInput) {
    this.clock = input.clock ?? systemClock;
    // Where results can be stored, the model can always read them back: a tool list that
    // changed at the first spill would change the request prefix the provider caches.
    const tools = input.persist.results && !input.tools.some((t) => t.name === READ_TOOL_RESULT) ? [...input.tools, readToolResultTool] : input.tools;
    this.tools = new Map(tools.map((t) => [t.name, t]));
    this.specs = tools.map(toolSpec);
    this.budget = new ResultBudget(input.persist.results);
    this.messages = [...input.history];
    this.progress = input.onProgress ?? (() => undefined);
    this.guard = new ToolLoopGuard({ hardHalt: input.unattended ?? false, ...input.guardrails });
  }

  /** Budget, stop and spend caps, before a model call: a LoopResult ends the turn. */
  private async gate(iteration: number): Promise<LoopResult | undefined> {
    const { input } = this;
    if (input.maxIterations !== undefined && iteration >= input.maxIterations) return this.budgetSpent(iteration);
    if (input.signal.aborted) return interrupted(input, this.partial, this.usage, iteration);
    const refused = await this.refused(iteration);
    if (refused) return refused;
    // A summary costs too: when one went out, the caps are checked again before the answer's call.
    if (this.overThreshold() && (await this.compressNow())) return this.refused(iteration);
    return undefined;
  }

  private async refused(iteration: number): Promise<LoopResult | undefined> {
    const refusal = await this.input.beforeCall?.();
    return refusal ? { outcome: 'failed', reply: refusal, error: `refused before the model call: ${refusal}`, usage: this.usage, iterations: iteration } : undefined;
  }

  async run(): Promise<LoopResult> {
    const { input } = this;
    for (let iteration = 0; ; iteration++) {
      const end = await this.gate(iteration);
      if (end) return end;
      const res = await this.call(iteration);
      if (res === 'redirected') continue;
      if (!res) return interrupted(input, this.partial, this.usage, iteration);
      if (!res.ok && res.compress && this.compressions < MAX_ATTEMPTS && (await this.compressNow())) continue;
      if (!res.ok) return failed(res, input, this.usage, iteration + 1);
      const done = res.completion;
      this.usage = addUsage(this.usage, done.usage);
      await input.onCall?.(done, res.route, 'turn');
      if (!done.toolCalls.length) return this.answer(done, iteration + 1);
      const stop = await this.runTools(done, iteration + 1);
      if (stop) return stop;
    }
  }

  private overThreshold(): boolean {
    const c = this.input.compression;
    return !!c && this.compressions < MAX_ATTEMPTS && estimateTokens([...this.input.system, ...this.messages]) > thresholdTokens(c.contextWindow);
  }

  /** Replaces the older conversation by a summary; false when there was nothing to replace. */
  private async compressNow(): Promise<boolean> {
    const { input } = this;
    if (!input.compression) return false;
    this.compressions++;
    const out = await compress(this.messages, {
      ...input.compression, session: input.sessionId, now: () => this.clock.now(),
      summarise: async (messages, maxTokens) => {
        // The summary is a model call like any other: it passes the caps and is accounted.
        const refusal = await input.beforeCall?.();
        if (refusal) throw new SummaryRefused(refusal);
        const res = await callModel({ routes: input.summaryRoutes ?? input.routes, explicit: input.explicitModel ?? false, request: { messages, signal: input.signal, maxOutputTokens: maxTokens, onChunk: this.progress }, clock: this.clock, ...(input.cooldowns ? { cooldowns: input.cooldowns } : {}), ...(input.policy ? { policy: input.policy } : {}) });
        this.progress();
        if (!res.ok) throw new Error(`summary call failed: ${res.error.reason}`);
        await input.onCall?.(res.completion, res.route, 'compression');
        return res.completion.text;
      },
    });
    if (!out) return false;
    this.messages.splice(0, this.messages.length, ...out.messages);
    await input.persist.compressed?.(out.summary, out.coversSeq);
    this.progress();
    return true;
  }

  private budgetSpent(iterations: number): LoopResult {
    const max = this.input.maxIterations!;
    const tail = this.partial ? `So far: ${this.partial}` : 'Ask me to continue if you want me to go on.';
    return { outcome: 'completed', reply: `I stopped after ${max} model calls (this agent's iteration budget) before finishing. ${tail}`, usage: this.usage, iterations };
  }

  private answer(done: Completion, iterations: number): LoopResult {
    if (!done.text.trim()) return { outcome: 'failed', reply: 'Sorry — the model returned an empty answer.', error: `empty completion (finish_reason ${done.finishReason})`, usage: this.usage, iterations };
    return { outcome: 'completed', reply: done.text, usage: this.usage, iterations };
  }

  /** The model call; undefined when the turn was stopped, 'redirected' when a correction cut it short. */
  private async call(iteration: number): Promise<ModelCallResult | undefined | 'redirected'> {
    const { input } = this;
    const budget = budgetNote(iteration, input.maxIterations);
    const notes = [...(input.ephemeral?.() ?? []), ...(budget ? [budget] : [])];
    const signal = input.control ? input.control.beginCall(input.signal) : input.signal;
    this.partial = '';
    try {
      const res = await this.callIn(signal, notes);
      this.progress();
      return res;
    } catch (err) {
      if (input.signal.aborted) return undefined;
      const correction = input.control?.endCall();
      if (correction === undefined) throw err;
      // Redirect: what was said so far stays in this turn's context, then the correction.
      if (this.partial) this.messages.push({ role: 'assistant', content: this.partial });
      this.messages.push({ role: 'user', content: correction });
      return 'redirected';
    } finally {
      const late = input.control?.endCall();
      if (late) input.control!.steer(late);
    }
  }

  private async callIn(signal: AbortSignal, notes: string[]): Promise<ModelCallResult> {
    const { input } = this;
    const primary = input.routes[0]!;
    const attrs = { 'gen_ai.system': primary.pool.current().name, 'gen_ai.request.model': primary.model };
    // The span wraps the whole call (retries, fallbacks); trace context rides on the request.
    return inSpan('hermes.model_call', attrs, context.active(), () => callModel({
        routes: input.routes,
        explicit: input.explicitModel ?? false,
        request: {
          messages: [...input.system, ...withNotes(this.messages, notes)],
          signal,
          ...(this.specs.length ? { tools: this.specs } : {}),
          onDelta: (t) => { this.partial += t; input.onDelta?.(t); },
          onChunk: this.progress,
          headers: injectTraceContext(),
          ...optional(input),
        },
        clock: this.clock,
        ...(input.cooldowns ? { cooldowns: input.cooldowns } : {}),
        ...(input.policy ? { policy: input.policy } : {}),
      }));
  }

  /** Persist the calls, run them, persist each result; a LoopResult when the turn must end. */
  private async runTools(answer: Completion, iterations: number): Promise<LoopResult | undefined> {
    const { input } = this;
    const done: Completion = { ...answer, toolCalls: uniqueCallIds(answer.toolCalls, this.messages) };
    const assistant: ChatMessage = { role: 'assistant', content: done.text, toolCalls: done.toolCalls, ...(done.reasoning ? { reasoning: done.reasoning } : {}) };
    const seq = await input.persist.assistant(assistant, done.usage);
    this.progress();
    if (typeof seq === 'number') assistant.seq = seq;
    this.messages.push(assistant);
    const ctx: ToolContext = { ...input.toolContext, tools: this.tools, sessionId: input.sessionId, signal: input.signal, now: () => this.clock.now(), keepAlive: () => this.progress(), ...(input.persist.results ? { storedResults: input.persist.results } : {}), ...(input.guard ? { guard: input.guard } : {}) };
    const outcomes = await runToolBatch(this.tools, done.toolCalls, ctx, this.batchHooks());
    if (input.signal.aborted) return interrupted(input, done.text, this.usage, iterations);
    // Steers: user lines after the tool batch, for this turn's requests only.
    for (const text of input.control?.takeSteers() ?? []) this.messages.push({ role: 'user', content: text });
    const halt = this.guard.halt;
    if (halt) return { outcome: 'failed', reply: haltReply(halt, done.text), error: `tool-loop guard ended the turn: ${halt.code} (${halt.tool}, ${halt.count}×)`, usage: this.usage, iterations };
    // A call the guard blocked counts like an invalid one: a model that keeps repeating it cannot loop forever.
    for (const o of outcomes) this.invalidInARow = o.kind === 'invalid' || o.kind === 'blocked' ? this.invalidInARow + 1 : 0;
    if (this.invalidInARow < MAX_INVALID_IN_A_ROW) return undefined;
    const reply = `I stopped: the model made ${this.invalidInARow} invalid, unknown or blocked tool calls in a row.${done.text ? ` Partial answer: ${done.text}` : ''}`;
    return { outcome: 'failed', reply, error: 'too many invalid tool calls in a row', usage: this.usage, iterations };
  }

  /** The guard decides before each call and after each result; each step has its deadline. */
  private batchHooks(): BatchHooks {
    const timeout = this.input.toolTimeout;
    return {
      onStart: this.progress,
      admit: (call) => this.guard.before(call, this.tools.get(call.name)),
      halted: () => this.guard.halt !== undefined,
      onResult: (o) => this.recordResult(o),
      ...(timeout?.ms !== undefined ? { timeoutMs: timeout.ms } : {}),
      ...(timeout?.clock ? { clock: timeout.clock } : {}),
    };
  }

  /** One finished call: limits (an oversized result is stored first), the guard's words for the model, then persist. */
  private async recordResult(o: ToolOutcome): Promise<void> {
    this.progress(); // a tool finished
    const raw = o.content;
    o.content = await this.budget.fit(o.call, raw);
    if (o.kind === 'ok' || o.kind === 'failed' || o.kind === 'timeout') {
      o.content += this.guard.after(o.call, this.tools.get(o.call.name), { content: raw, failed: o.kind !== 'ok', rateLimited: o.rateLimited ?? false });
    }
    const msg: ChatMessage = { role: 'tool', content: o.content, toolCallId: o.call.id, name: o.call.name };
    const resultSeq = await this.input.persist.toolResult(msg, o.disposition);
    this.progress();
    if (typeof resultSeq === 'number') msg.seq = resultSeq;
    this.messages.push(msg);
  }
}

/** SPEC/Hermes iteration-budget pressure: a nudge at 70 % of the budget, a warning at 90 %. */
export const BUDGET_CAUTION = 0.7;
export const BUDGET_WARNING = 0.9;

/** The budget note for the model call at `iteration` (0-based), if the budget is that far spent. */
export function budgetNote(iteration: number, max: number | undefined): string | undefined {
  if (max === undefined) return undefined;
  const progress = iteration / max;
  const left = max - iteration; // this call included
  if (progress >= BUDGET_WARNING) return `[Iteration budget: this is model call ${iteration + 1} of ${max}; ${left === 1 ? 'it is the last one' : `only ${left} are left`}. Give your final answer now.]`;
  if (progress >= BUDGET_CAUTION) return `[Iteration budget: this is model call ${iteration + 1} of ${max}; ${left} are left. Start wrapping up your work.]`;
  return undefined;
}

/**
 * The request's copy of the conversation with `notes` appended to its last message (a tool
 * result or the user's line), so the prefix a provider caches is untouched and nothing is stored.
 */
export function withNotes(messages: readonly ChatMessage[], notes: readonly string[]): ChatMessage[] {
  if (!notes.length) return [...messages];
  const text = notes.join('\n\n');
  const last = messages.at(-1);
  if (last && (last.role === 'tool' || last.role === 'user')) return [...messages.slice(0, -1), { ...last, content: `${last.content}\n\n${text}` }];
  return [...messages, { role: 'user', content: text }];
}

export function runAgentLoop(input: LoopInput): Promise<LoopResult> {
  return new TurnLoop(input).run();
}
