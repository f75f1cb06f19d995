// Running the tool calls the model asked for. Every call ends as a tool result — unknown tools,
// invalid arguments, handler errors and abandoned calls included — and each result says whether
// its effect was applied (`applied`), did not happen (`none`) or cannot be known (`unknown`).
import { systemClock, type Clock } from '../clock.js';
import type { ToolCall } from '../messages.js';
import type { Tool, ToolContext } from './registry.js';
import { unstorableArgument } from './storable-args.js';

// The result limits are applied by the loop when a result is recorded (`ResultBudget`).
export * from './results.js';

export type EffectDisposition = 'applied' | 'none' | 'unknown';

/**
 * How a call ended: `ok` (the handler returned), `failed` (it threw, or returned an error value),
 * `timeout` (still running at the batch deadline), `invalid` (unknown tool or bad arguments: not
 * run), `blocked` (refused by the tool-loop guard: not run), `cancelled` (stopped or never started).
 */
export type OutcomeKind = 'ok' | 'failed' | 'timeout' | 'invalid' | 'blocked' | 'cancelled';

export interface ToolOutcome {
  call: ToolCall;
  /** The handler's whole output: the loop applies the result limits when it records it. */
  content: string;
  disposition: EffectDisposition;
  kind: OutcomeKind;
  /** A failure the tool reported as a rate limit (HTTP 429): the tool-loop guard does not count it. */
  rateLimited?: boolean;
}

export const MAX_ERROR_CHARS = 2_048;
/** Calls of one parallel step running at once (SPEC: 8). */
export const MAX_PARALLEL = 8;
/** Deadline of one step: a parallel group, or one call run in order (SPEC: 420 s). */
export const TOOL_BATCH_TIMEOUT_MS = 420_000;
export const INVALID_ARGS = 'Tool arguments must be a valid JSON object; tool was not executed.';

const sanitize = (msg: string) => msg.replace(/(sk-|key-|Bearer\s+)[A-Za-z0-9_-]{6,}/g, '$1[redacted]').slice(0, MAX_ERROR_CHARS - 13);

function parseArgs(raw: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(raw.trim() === '' ? '{}' : raw);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Why a step's calls were abandoned when its deadline passed (the abort reason of their signal). */
export class ToolDeadline extends Error {
  constructor(readonly ms: number) {
    super(`the tool batch deadline of ${Math.round(ms / 1_000)} s passed`);
  }
}

const ABORTED = Symbol('aborted');

/** A stop or a deadline takes effect even for handlers that never look at the signal. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    void p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

const RATE_LIMITED = /\b429\b|rate[ -]?limit|too many requests/i;

function isRateLimit(err: unknown, msg: string): boolean {
  const e = err as { status?: unknown; statusCode?: unknown } | null;
  return e?.status === 429 || e?.statusCode === 429 || RATE_LIMITED.test(msg);
}

/** A returned error value (`{"error": …}` or `{"ok": false, …}`) is a failure too. */
function errorValue(out: string): string | undefined {
  if (!out.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(out) as Record<string, unknown>;
    if (v.ok === false || (v.error !== undefined && v.error !== null && v.error !== false)) return out;
  } catch {
    // not JSON: an ordinary result
  }
  return undefined;
}

/** The result of a call whose handler was still running when its signal aborted. */
function abandoned(call: ToolCall, tool: Tool, signal: AbortSignal): ToolOutcome {
  // The handler may still be running: a side effect can neither be confirmed nor ruled out.
  const disposition = tool.sideEffect === 'read-only' ? 'none' : 'unknown';
  const reason: unknown = signal.reason;
  if (reason instanceof ToolDeadline) {
    return { call, content: `timed out: ${call.name} was still running when ${reason.message}; its result was not awaited${disposition === 'unknown' ? ' and its effect is unknown' : ''}.`, disposition, kind: 'timeout' };
  }
  return { call, content: `cancelled: ${call.name} was running when the turn was stopped; its result was not awaited.`, disposition, kind: 'cancelled' };
}

export async function runTool(tools: ReadonlyMap<string, Tool>, call: ToolCall, ctx: ToolContext): Promise<ToolOutcome> {
  const tool = tools.get(call.name);
  if (!tool) return { call, content: JSON.stringify({ error: `Unknown tool: ${call.name}` }), disposition: 'none', kind: 'invalid' };
  const args = parseArgs(call.arguments);
  if (!args) return { call, content: INVALID_ARGS, disposition: 'none', kind: 'invalid' };
  const parsed = tool.schema.safeParse(args);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    return { call, content: `Invalid arguments for ${call.name}: ${issues}. Tool was not executed.`.slice(0, MAX_ERROR_CHARS), disposition: 'none', kind: 'invalid' };
  }
  const unstorable = tool.postgresArguments ? unstorableArgument(parsed.data) : undefined;
  if (unstorable) return { call, content: `Invalid arguments for ${call.name}: ${unstorable.path} ${unstorable.why}, which cannot be stored; leave it out. Tool was not executed.`, disposition: 'none', kind: 'invalid' };
  const effect = tool.sideEffect === 'read-only' ? 'none' : 'applied';
  try {
    const out = await untilAborted(Promise.resolve(tool.handler(parsed.data, { ...ctx, toolCallId: call.id })), ctx.signal);
    if (out === ABORTED) return abandoned(call, tool, ctx.signal);
    const error = errorValue(out);
    return { call, content: out, disposition: effect, kind: error ? 'failed' : 'ok', ...(error && RATE_LIMITED.test(error) ? { rateLimited: true } : {}) };
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // A side-effecting handler that failed part-way may have changed something: say so.
    return { call, content: `[TOOL_ERROR] ${sanitize(msg)}`, disposition: effect === 'none' ? 'none' : 'unknown', kind: 'failed', ...(isRateLimit(err, msg) ? { rateLimited: true } : {}) };
  }
}

export const cancelledOutcome = (call: ToolCall, why: string): ToolOutcome =>
  ({ call, content: `cancelled: ${call.name} was not started (${why}).`, disposition: 'none', kind: 'cancelled' });

export interface BatchHooks {
  /** Persists one result; called in call order, before the next in-order call starts. */
  onResult: (o: ToolOutcome) => Promise<void>;
  onStart?: (call: ToolCall) => void;
  /** Before a call starts: an explicit result refuses it (the tool-loop guard's block); the tool does not run. */
  admit?: (call: ToolCall) => string | undefined;
  /** Checked before each step: true leaves the rest of the batch unstarted (the guard ended the turn). */
  halted?: () => boolean;
  /** Each step's deadline. @defaultValue TOOL_BATCH_TIMEOUT_MS */
  timeoutMs?: number;
  /** The deadline's clock. @defaultValue systemClock */
  clock?: Clock;
}

interface Step {
  parallel: boolean;
  calls: ToolCall[];
}

/** Contiguous read-only calls form one parallel step; every other call is a step of its own, in order. */
export function planSteps(tools: ReadonlyMap<string, Tool>, calls: readonly ToolCall[]): Step[] {
  const steps: Step[] = [];
  for (const call of calls) {
    const parallel = tools.get(call.name)?.sideEffect === 'read-only';
    const last = steps.at(-1);
    if (parallel && last?.parallel) last.calls.push(call);
    else steps.push({ parallel, calls: [call] });
  }
  return steps;
}

/** Runs `fn` over `items` with at most `size` running at once, started in order; results in order. */
function pooled<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R>[] {
  let free = size;
  const waiting: (() => void)[] = [];
  const acquire = () => (free > 0 ? (free--, Promise.resolve()) : new Promise<void>((r) => waiting.push(r)));
  const release = () => { const next = waiting.shift(); if (next) next(); else free++; };
  return items.map(async (item) => {
    await acquire();
    try {
      return await fn(item);
    } finally {
      release();
    }
  });
}

/** Ends a finished step's deadline timer (one shared reason: abort() without one builds a DOMException each time). */
const STEP_DONE = new Error('tool step finished');

/** Starts one step under its deadline; the calls still running when it passes are abandoned. */
function runStep(tools: ReadonlyMap<string, Tool>, step: Step, ctx: ToolContext, hooks: BatchHooks): Promise<ToolOutcome>[] {
  const ms = hooks.timeoutMs ?? TOOL_BATCH_TIMEOUT_MS;
  const deadline = new AbortController();
  const timer = new AbortController();
  // A call waiting for a person (clarify) ends by its own timeout, not the step deadline.
  const untimed = step.calls.every((c) => tools.get(c.name)?.waitsForPerson);
  if (!untimed) void (hooks.clock ?? systemClock).sleep(ms, timer.signal).then(() => deadline.abort(new ToolDeadline(ms)), () => undefined);
  const signal = AbortSignal.any([ctx.signal, deadline.signal]);
  const start = async (call: ToolCall): Promise<ToolOutcome> => {
    if (signal.aborted) return cancelledOutcome(call, deadline.signal.aborted ? new ToolDeadline(ms).message : 'the turn was stopped');
    const refusal = hooks.admit?.(call);
    if (refusal !== undefined) return { call, content: refusal, disposition: 'none', kind: 'blocked' };
    hooks.onStart?.(call);
    return runTool(tools, call, { ...ctx, signal });
  };
  const results = pooled(step.calls, step.parallel ? MAX_PARALLEL : 1, start);
  void Promise.allSettled(results).then(() => timer.abort(STEP_DONE));
  return results;
}

/**
 * Runs the batch step by step (see `planSteps`), each step under its 420 s deadline. Results are
 * passed to `onResult` in call order. After a stop, or once the guard ended the turn, the calls not
 * yet started get explicit "not started" results.
 */
export async function runToolBatch(tools: ReadonlyMap<string, Tool>, calls: ToolCall[], ctx: ToolContext, hooks: BatchHooks): Promise<ToolOutcome[]> {
  const out: ToolOutcome[] = [];
  for (const step of planSteps(tools, calls)) {
    const why = ctx.signal.aborted ? 'the turn was stopped' : hooks.halted?.() ? 'the tool-loop guard ended the turn' : undefined;
    const results = why ? step.calls.map((c) => Promise.resolve(cancelledOutcome(c, why))) : runStep(tools, step, ctx, hooks);
    for (const r of results) {
      const o = await r;
      await hooks.onResult(o);
      out.push(o);
    }
  }
  return out;
}
