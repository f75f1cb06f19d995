// Running a batch of tool calls the model asked for. Every call ends as a tool result — unknown
// tools, invalid arguments and handler errors included — and each result says whether its
// effect was applied (`applied`), did not happen (`none`) or cannot be known (`unknown`).
import type { ToolCall } from '../messages.js';
import type { Tool, ToolContext } from './registry.js';

export type EffectDisposition = 'applied' | 'none' | 'unknown';

export interface ToolOutcome {
  call: ToolCall;
  content: string;
  disposition: EffectDisposition;
  /** Unknown tool or invalid arguments: counts toward the "3 in a row ends the turn" rule. */
  invalid: boolean;
}

export const MAX_RESULT_CHARS = 100_000;
export const MAX_ERROR_CHARS = 2_048;
export const MAX_PARALLEL = 8;
export const INVALID_ARGS = 'Tool arguments must be a valid JSON object; tool was not executed.';

const sanitize = (msg: string) => msg.replace(/(sk-|key-|Bearer\s+)[A-Za-z0-9_-]{6,}/g, '$1[redacted]').slice(0, MAX_ERROR_CHARS - 13);

function truncate(s: string): string {
  if (s.length <= MAX_RESULT_CHARS) return s;
  return `${s.slice(0, MAX_RESULT_CHARS)}\n[truncated: ${s.length - MAX_RESULT_CHARS} more characters]`;
}

function parseArgs(raw: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(raw.trim() === '' ? '{}' : raw);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const ABORTED = Symbol('aborted');

/** A stop takes effect even for handlers that never look at the signal. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    void p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export async function runTool(tools: ReadonlyMap<string, Tool>, call: ToolCall, ctx: ToolContext): Promise<ToolOutcome> {
  const tool = tools.get(call.name);
  if (!tool) return { call, content: JSON.stringify({ error: `Unknown tool: ${call.name}` }), disposition: 'none', invalid: true };
  const args = parseArgs(call.arguments);
  if (!args) return { call, content: INVALID_ARGS, disposition: 'none', invalid: true };
  const parsed = tool.schema.safeParse(args);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    return { call, content: `Invalid arguments for ${call.name}: ${issues}. Tool was not executed.`.slice(0, MAX_ERROR_CHARS), disposition: 'none', invalid: true };
  }
  try {
    const out = await untilAborted(Promise.resolve(tool.handler(parsed.data, ctx)), ctx.signal);
    if (out === ABORTED) {
      // The handler may still be running: a side effect can neither be confirmed nor ruled out.
      return { call, content: `cancelled: ${call.name} was running when the turn was stopped; its result was not awaited.`, disposition: tool.sideEffect === 'read-only' ? 'none' : 'unknown', invalid: false };
    }
    return { call, content: truncate(out), disposition: tool.sideEffect === 'read-only' ? 'none' : 'applied', invalid: false };
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    // A side-effecting handler that failed part-way may have changed something: say so.
    return { call, content: `[TOOL_ERROR] ${sanitize(msg)}`, disposition: tool.sideEffect === 'read-only' ? 'none' : 'unknown', invalid: false };
  }
}

export const cancelledOutcome = (call: ToolCall, why: string): ToolOutcome =>
  ({ call, content: `cancelled: ${call.name} was not started (${why}).`, disposition: 'none', invalid: false });

/**
 * Runs the batch: all read-only → in parallel (up to 8 at once); otherwise in order. `onResult`
 * persists each result before the next call starts (in order mode). After an abort, the calls
 * not yet started get explicit "cancelled" results.
 */
export async function runToolBatch(
  tools: ReadonlyMap<string, Tool>, calls: ToolCall[], ctx: ToolContext, onResult: (o: ToolOutcome) => Promise<void>,
): Promise<ToolOutcome[]> {
  const out: ToolOutcome[] = [];
  const parallel = calls.every((c) => tools.get(c.name)?.sideEffect === 'read-only');
  const step = parallel ? MAX_PARALLEL : 1;
  for (let i = 0; i < calls.length; i += step) {
    const slice = calls.slice(i, i + step);
    const results = ctx.signal.aborted
      ? slice.map((c) => cancelledOutcome(c, 'the turn was stopped'))
      : await Promise.all(slice.map((c) => runTool(tools, c, ctx)));
    for (const r of results) {
      await onResult(r);
      out.push(r);
    }
  }
  return out;
}
