// Tool result limits (SPEC "The turn"): ≤ 100 000 characters per result, ≤ 200 000 per turn,
// 1 500-character previews. A result over either limit is stored in full (spill-over) and the
// model is sent a preview block naming its id; `read_tool_result` pages through the rest. When
// it cannot be stored, it is cut with a notice instead: a failed store never fails the turn.
import type { ToolCall } from '../messages.js';

export const MAX_RESULT_CHARS = 100_000;
/** Characters the model sees of all tool results of one turn (SPEC: 200 000). */
export const MAX_TURN_RESULT_CHARS = 200_000;
/** What a spilled result is cut to in its preview block (SPEC: 1 500). */
export const PREVIEW_CHARS = 1_500;
/** The built-in tool that reads stored results back. */
export const READ_TOOL_RESULT = 'read_tool_result';
/** Characters `read_tool_result` returns when no limit is given. */
export const READ_PAGE_CHARS = 20_000;
/** The most characters one `read_tool_result` call returns. */
export const MAX_READ_PAGE_CHARS = 50_000;
/**
 * Tools whose results are never stored and replaced by a preview (SPEC: `read_file` never
 * spills; `read_tool_result` pages are bounded by their own limit). Spilling a read of a stored
 * result would only store it again.
 */
export const NEVER_SPILLS: ReadonlySet<string> = new Set(['read_file', READ_TOOL_RESULT]);

/** A page of a stored result; `offset` and `size` in characters (JavaScript string length). */
export type StoredResultPage =
  | { ok: true; toolName: string; size: number; offset: number; text: string }
  | { ok: false; reason: 'not_found' | 'other_session' };

/** Where a turn stores its oversized results: one session's, filled by the worker. */
export interface ToolResultStore {
  /** Stores the full result; the id the preview block names. Throws when it could not. */
  save(r: { toolCallId: string; toolName: string; content: string }): Promise<string>;
  /** `limit` characters of a stored result of this session, from `offset`. */
  read(id: string, offset: number, limit: number): Promise<StoredResultPage>;
}

const n = (x: number) => x.toLocaleString('en-US');

/** The fallback for a result over the per-result limit that could not be stored: its first 100 000 characters and a notice. */
export function truncateResult(s: string, limit = MAX_RESULT_CHARS): string {
  if (s.length <= limit) return s;
  return `${s.slice(0, limit)}\n[truncated: the result had ${n(s.length)} characters; the first ${n(limit)} are shown and ${n(s.length - limit)} were cut (not stored). Ask for a narrower result if you need the rest.]`;
}

/** The fallback for a result the turn's budget has no room for and that could not be stored. */
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

/** The head of `content` shown in a preview: cut after the last line break in the second half of `max`, as Hermes does. */
export function previewOf(content: string, max = PREVIEW_CHARS): string {
  if (content.length <= max) return content;
  const nl = content.lastIndexOf('\n', max - 1);
  return content.slice(0, nl >= max / 2 ? nl + 1 : max);
}

export interface Spill {
  id: string;
  tool: string;
  content: string;
  /** Why it was stored: over the per-result limit, or past the turn's budget. */
  over: 'result' | 'turn';
  limit: number;
  /** Characters of the turn's budget already used (for `over: 'turn'`). */
  used: number;
  preview?: number;
}

/** The block that replaces a stored result: why, its id and size, how to read on, then its head. */
export function storedBlock(s: Spill): string {
  const head = previewOf(s.content, s.preview);
  const why = s.over === 'result'
    ? `more than one tool result may have (${n(s.limit)})`
    : `more than this turn's tool-output budget has left (${n(s.limit)} characters per turn, ${n(Math.min(s.used, s.limit))} already used)`;
  return [
    '<tool-result-preview>',
    `This ${s.tool} result had ${n(s.content.length)} characters, ${why}. It was stored in full as id ${s.id}.`,
    `The first ${n(head.length)} characters are shown. Read the rest with ${READ_TOOL_RESULT} {"id": "${s.id}", "offset": ${head.length}} (up to ${n(MAX_READ_PAGE_CHARS)} characters a call with "limit"); do not run ${s.tool} again for the same output.`,
    '<preview>',
    head,
    '</preview>',
    '</tool-result-preview>',
  ].join('\n');
}

export interface ResultLimits {
  /** @defaultValue MAX_RESULT_CHARS */
  perResult?: number;
  /** @defaultValue MAX_TURN_RESULT_CHARS */
  perTurn?: number;
  /** @defaultValue PREVIEW_CHARS */
  preview?: number;
}

/**
 * One turn's tool-result limits. A result over the per-result limit, or one that would take the
 * turn past its budget, is stored and replaced by its preview block (the block's size counts);
 * without a store, or when storing fails, it is cut with a notice. Results no longer than a
 * preview always fit; `NEVER_SPILLS` tools only get the per-result cut.
 */
export class ResultBudget {
  private used = 0;
  private readonly perResult: number;
  private readonly perTurn: number;
  private readonly preview: number;

  constructor(private readonly store?: ToolResultStore, limits: ResultLimits = {}) {
    this.perResult = limits.perResult ?? MAX_RESULT_CHARS;
    this.perTurn = limits.perTurn ?? MAX_TURN_RESULT_CHARS;
    this.preview = limits.preview ?? PREVIEW_CHARS;
  }

  /** Characters of tool results the model has been sent this turn. */
  get spent(): number {
    return this.used;
  }

  /** What the model is sent (and the transcript keeps) for this result. */
  async fit(call: Pick<ToolCall, 'id' | 'name'>, content: string): Promise<string> {
    const out = await this.shape(call, content);
    this.used += out.length;
    return out;
  }

  private async shape(call: Pick<ToolCall, 'id' | 'name'>, content: string): Promise<string> {
    if (NEVER_SPILLS.has(call.name)) return truncateResult(content, this.perResult);
    const over = content.length > this.perResult ? 'result' : this.fits(content) ? undefined : 'turn';
    if (!over) return content;
    const id = await this.save(call, content);
    if (id) return storedBlock({ id, tool: call.name, content, over, limit: over === 'result' ? this.perResult : this.perTurn, used: this.used, preview: this.preview });
    const cut = truncateResult(content, this.perResult);
    return this.fits(cut) ? cut : previewBlock(content, this.used, this.perTurn, this.preview);
  }

  private fits(s: string): boolean {
    return s.length <= this.preview || this.used + s.length <= this.perTurn;
  }

  private async save(call: Pick<ToolCall, 'id' | 'name'>, content: string): Promise<string | undefined> {
    if (!this.store) return undefined;
    try {
      return await this.store.save({ toolCallId: call.id, toolName: call.name, content });
    } catch {
      return undefined; // the store reports its own failures; the model gets the cut result
    }
  }
}
