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

/** Characters the model sees of all tool results of one turn (SPEC: 200 000). */
export const MAX_TURN_RESULT_CHARS = 200_000;
/** What a result over the turn's budget is cut to (SPEC: 1 500). */
export const PREVIEW_CHARS = 1_500;
/** Tools whose results are never replaced by a preview (SPEC: `read_file` never spills). */
export const NEVER_SPILLS: ReadonlySet<string> = new Set(['read_file']);

const n = (x: number) => x.toLocaleString('en-US');

/** A result over the per-result limit keeps its first 100 000 characters and says how much was cut. */
export function truncateResult(s: string, limit = MAX_RESULT_CHARS): string {
  if (s.length <= limit) return s;
  return `${s.slice(0, limit)}\n[truncated: the result had ${n(s.length)} characters; the first ${n(limit)} are shown and ${n(s.length - limit)} were cut (not stored). Ask for a narrower result if you need the rest.]`;
}

/** The block that replaces a result the turn's budget has no room for. */
export function previewBlock(content: string, used: number, limit = MAX_TURN_RESULT_CHARS, preview = PREVIEW_CHARS): string {
  return [
    '<tool-result-preview>',
    `This result had ${n(content.length)} characters, more than this turn's tool-output budget has left (${n(limit)} characters per turn, ${n(Math.min(used, limit))} already used).`,
    `The first ${n(preview)} characters are shown; ${n(content.length - preview)} were cut and not stored. Ask for a narrower result (a range, a filter) if you need more.`,
    '<preview>',
    content.slice(0, preview),
    '</preview>',
    '</tool-result-preview>',
  ].join('\n');
}

/**
 * The per-turn budget over tool results: results fit while the turn's total stays within
 * 200 000 characters; a bigger one is replaced by its preview block (the block's size counts).
 * `read_file` results and results no longer than a preview always go through unchanged.
 */
export class ResultBudget {
  private used = 0;
  constructor(private readonly limit = MAX_TURN_RESULT_CHARS, private readonly preview = PREVIEW_CHARS) {}

  get spent(): number {
    return this.used;
  }

  fit(tool: string, content: string): string {
    const out = NEVER_SPILLS.has(tool) || content.length <= this.preview || this.used + content.length <= this.limit
      ? content
      : previewBlock(content, this.used, this.limit, this.preview);
    this.used += out.length;
    return out;
  }
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
    return { call, content: truncateResult(out), disposition: tool.sideEffect === 'read-only' ? 'none' : 'applied', invalid: false };
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
  onStart?: (call: ToolCall) => void,
): Promise<ToolOutcome[]> {
  const out: ToolOutcome[] = [];
  const parallel = calls.every((c) => tools.get(c.name)?.sideEffect === 'read-only');
  const step = parallel ? MAX_PARALLEL : 1;
  for (let i = 0; i < calls.length; i += step) {
    const slice = calls.slice(i, i + step);
    const results = ctx.signal.aborted
      ? slice.map((c) => cancelledOutcome(c, 'the turn was stopped'))
      : await Promise.all(slice.map((c) => { onStart?.(c); return runTool(tools, c, ctx); }));
    for (const r of results) {
      await onResult(r);
      out.push(r);
    }
  }
  return out;
}
