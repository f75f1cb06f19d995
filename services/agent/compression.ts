// Context compression: when the conversation nears the context window (or the provider says it
// overflowed), the older part is replaced by a summary and a recent tail stays verbatim. The tail
// follows Hermes' token rule — it holds the most recent ~20 000 tokens — but never fewer than the
// last 20 messages; it never separates a tool call from its results and always keeps the latest
// user message. The
// summary comes from the model, or — when that fails or is cooling down — from a deterministic
// digest of at most 8000 characters.
import type { ChatMessage } from './messages.js';

/**
 * SPEC "protect last 20 messages": the tail's floor — these are never summarised. (Hermes' own
 * compressor lowers its floor to 8 so a few bulky results cannot make a short conversation
 * incompressible; we keep SPEC's 20: such a conversation fails after 3 attempts with the `/new` hint.)
 */
export const PROTECT_LAST = 20;
/** SPEC "keep recent 20 000 tokens": the tail's token budget. */
export const KEEP_RECENT_TOKENS = 20_000;
/** The tail budget never exceeds this share of the compression threshold (Hermes `target_ratio`). */
export const TARGET_RATIO = 0.2;
/** SPEC hygiene pre-compression: a stored transcript at 85 % of the window is compressed before the turn. */
export const HYGIENE_RATIO = 0.85;
/** The summary may use this share of the tokens it replaces (Hermes `_SUMMARY_RATIO`). */
export const SUMMARY_RATIO = 0.2;
export const MAX_ATTEMPTS = 3;
export const FALLBACK_MAX_CHARS = 8_000;
export const SUMMARY_PREFIX = '[Summary of the earlier conversation]';
const DEFAULT_WINDOW = 128_000;
/** Hermes lets whole messages overrun the tail budget by half before it cuts. */
const SOFT_CEILING = 1.5;

/** 0.50 of the window, raised to 0.75 for windows under 512K tokens. */
export function thresholdTokens(contextWindow = DEFAULT_WINDOW): number {
  return Math.floor(contextWindow * (contextWindow < 512_000 ? 0.75 : 0.5));
}

/** Where hygiene pre-compression starts: 85 % of the window. */
export function hygieneTokens(contextWindow = DEFAULT_WINDOW): number {
  return Math.floor(contextWindow * HYGIENE_RATIO);
}

/** Rough token count (4 characters a token) — enough to decide when to compress. */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += m.content.length + 8;
    for (const c of m.toolCalls ?? []) chars += c.name.length + c.arguments.length;
  }
  return Math.ceil(chars / 4);
}

/** What shapes the verbatim tail. */
export interface TailOptions {
  /** Context window in tokens. @defaultValue 128 000 */
  contextWindow?: number;
  /** Token budget of the verbatim tail (SPEC "keep recent 20 000 tokens"). @defaultValue 20 000 */
  keepRecentTokens?: number;
}

/** The tail's token budget: the setting, capped at the target ratio (0.20) of the threshold so a small window still has room to compress. */
export function tailBudget(opts: TailOptions = {}): number {
  return Math.min(opts.keepRecentTokens ?? KEEP_RECENT_TOKENS, Math.floor(thresholdTokens(opts.contextWindow) * TARGET_RATIO));
}

const carriesCalls = (m: ChatMessage | undefined) => m?.role === 'assistant' && !!m.toolCalls?.length;
const isRealUser = (m: ChatMessage) => m.role === 'user' && !!m.content.trim() && !m.content.startsWith(SUMMARY_PREFIX);

/**
 * Walks back from the end adding messages while their tokens fit `budget`; once `floor` messages
 * (counting the one at hand) are in, the first that does not fit ends the walk. With
 * `keepCrossing` that message stays in the tail (Hermes' re-walk when everything fit).
 */
function walkBack(messages: readonly ChatMessage[], start: number, budget: number, floor: number, keepCrossing: boolean): number {
  let used = 0;
  for (let i = messages.length - 1; i >= start; i--) {
    const tokens = estimateTokens([messages[i]!]);
    if (used + tokens > budget && messages.length - i >= floor) return keepCrossing ? i : i + 1;
    used += tokens;
  }
  return start;
}

/** A cut right after tool results (or after the call itself) moves back to the assistant that made the calls. */
function beforeToolGroup(messages: readonly ChatMessage[], cut: number): number {
  if (cut <= 0 || cut >= messages.length) return cut;
  let i = cut - 1;
  while (i >= 0 && messages[i]!.role === 'tool') i--;
  return carriesCalls(messages[i]) ? i : cut;
}

/** A cut on tool results moves forward past them (used when the cut had to be raised). */
function pastToolResults(messages: readonly ChatMessage[], cut: number): number {
  while (cut < messages.length && messages[cut]!.role === 'tool') cut++;
  return cut;
}

/**
 * The latest real user message (not a summary) belongs in the tail. When it is the very first
 * compressible message, its whole exchange (user, reply, tool results) is summarised instead, so
 * no question is left behind without its answer.
 */
function keepLastUser(messages: readonly ChatMessage[], cut: number, start: number): number {
  let last = messages.length - 1;
  while (last >= start && !isRealUser(messages[last]!)) last--;
  if (last < start || last >= cut) return cut;
  if (last > start) return last;
  let end = last + 1;
  if (messages[end]?.role === 'assistant') end = pastToolResults(messages, end + 1);
  return Math.max(end, start + 1);
}

/**
 * Where the verbatim tail starts (0 = nothing to compress), Hermes' rule: walking back from the
 * end, the tail takes messages while they fit 1.5× the token budget, but always at least the
 * last {@link PROTECT_LAST} messages (a conversation of no more has nothing to compress).
 * When everything fits, the walk is redone against the plain budget so compression still frees
 * room. The cut never separates tool calls from their results and never leaves the latest user
 * message in the summary.
 */
export function splitPoint(messages: readonly ChatMessage[], opts: TailOptions = {}): number {
  const n = messages.length;
  const start = pastToolResults(messages, 0);
  if (n - start <= PROTECT_LAST) return 0;
  const floor = PROTECT_LAST;
  const budget = tailBudget(opts);
  let cut = walkBack(messages, start, Math.floor(budget * SOFT_CEILING), floor, false);
  if (cut <= start) cut = walkBack(messages, start, budget, floor, true);
  cut = Math.min(cut, n - floor);
  if (cut <= start) cut = Math.max(n - floor, start + 1);
  cut = keepLastUser(messages, beforeToolGroup(messages, cut), start);
  cut = pastToolResults(messages, Math.max(cut, start + 1));
  return cut < n ? cut : 0;
}

/**
 * Where the last `turns` turns start (a turn: a real user message and what follows it), for
 * Hermes' `/compress here [N]`: the person chose how much stays verbatim, so neither the 20-message
 * floor nor the token budget applies. 0 when there is nothing before them.
 */
export function turnsSplitPoint(messages: readonly ChatMessage[], turns: number): number {
  const start = pastToolResults(messages, 0);
  let cut = messages.length;
  for (let left = turns; left > 0 && cut > start;) {
    cut--;
    if (isRealUser(messages[cut]!)) left--;
  }
  return cut > start ? cut : 0;
}

const line = (m: ChatMessage): string => {
  const calls = (m.toolCalls ?? []).map((c) => `${c.name}(${c.arguments.slice(0, 100)})`).join(', ');
  const text = m.content.replace(/\s+/g, ' ').trim().slice(0, 300);
  return `- ${m.role}${calls ? ` called ${calls}` : ''}${text ? `: ${text}` : ''}`;
};

/** A digest that needs no model: one line per message, oldest dropped first to fit 8000 chars. */
export function fallbackSummary(head: readonly ChatMessage[]): string {
  const lines = head.map(line);
  const header = `${SUMMARY_PREFIX} (automatic digest; ${head.length} messages)\n`;
  let body = lines.join('\n');
  while (header.length + body.length > FALLBACK_MAX_CHARS && lines.length > 1) {
    lines.shift();
    body = `- …\n${lines.join('\n')}`;
  }
  return (header + body).slice(0, FALLBACK_MAX_CHARS);
}

export const SUMMARY_INSTRUCTION = 'Summarise the conversation below for your own later use: the user\'s goals, decisions made, facts learned, tool results that matter, and open tasks. Be specific and brief. Do not address the user.';

/** At most this much of a `/compress <focus>` topic reaches the summary request. */
export const FOCUS_MAX_CHARS = 500;

/** The line that asks the summary to favour `focus` (Hermes' `/compress <focus topic>`). */
export const focusInstruction = (focus: string) =>
  `Focus the summary on: ${focus.slice(0, FOCUS_MAX_CHARS)}. Keep what concerns it in full detail; everything else may be shortened more.`;

/** The request that asks the model for a summary of `head` (with a `focus`: favouring that topic). */
export function summaryRequest(head: readonly ChatMessage[], focus?: string): ChatMessage[] {
  const transcript = head.map(line).join('\n');
  const guided: ChatMessage[] = focus ? [{ role: 'system', content: focusInstruction(focus) }] : [];
  return [{ role: 'system', content: SUMMARY_INSTRUCTION }, ...guided, { role: 'user', content: transcript }];
}

/** Max tokens for the summary: 0.20 of what it replaces (at least 256). */
export const summaryBudget = (head: readonly ChatMessage[]) => Math.max(256, Math.floor(estimateTokens(head) * SUMMARY_RATIO));

/** Per-session cool-down after a failed summary call: 60 s, then 300 s, then 900 s. */
export class SummaryCooldown {
  private static readonly STEPS = [60_000, 300_000, 900_000];
  private readonly state = new Map<string, { until: number; failures: number }>();
  cooling(session: string, now: number): boolean {
    return (this.state.get(session)?.until ?? 0) > now;
  }
  fail(session: string, now: number): void {
    const failures = (this.state.get(session)?.failures ?? 0) + 1;
    this.state.set(session, { failures, until: now + SummaryCooldown.STEPS[Math.min(failures, 3) - 1]! });
  }
  succeed(session: string): void {
    this.state.delete(session);
  }
}

export interface Compressed {
  messages: ChatMessage[];
  summary: string;
  /** How the summary was made. */
  source: 'model' | 'fallback';
  /** Highest stored sequence number the summary covers (for the transcript marker). */
  coversSeq: number | undefined;
  replaced: number;
}

/**
 * `summarise` was not allowed to call the model (a spend cap is reached): the digest is used,
 * and — unlike a failed call — the session's summary cool-down is not started.
 */
export class SummaryRefused extends Error {
  override name = 'SummaryRefused';
}

export interface CompressOptions extends TailOptions {
  session: string;
  now: () => number;
  cooldown: SummaryCooldown;
  summarise: (req: ChatMessage[], maxTokens: number) => Promise<string>;
  /** `/compress <focus>`: the topic the summary keeps in detail. */
  focus?: string;
  /** `/compress here [N]`: keep exactly the last N turns verbatim (turnsSplitPoint) instead of the tail rule. */
  keepTurns?: number;
}

/**
 * Compresses `messages` (the conversation, without system prompt). `summarise` asks the model;
 * when it throws or the session is cooling down, the deterministic digest is used.
 */
export async function compress(messages: readonly ChatMessage[], opts: CompressOptions): Promise<Compressed | undefined> {
  const cut = opts.keepTurns === undefined ? splitPoint(messages, opts) : turnsSplitPoint(messages, opts.keepTurns);
  if (cut === 0) return undefined;
  const head = messages.slice(0, cut);
  let summary: string | undefined;
  let source: Compressed['source'] = 'fallback';
  if (!opts.cooldown.cooling(opts.session, opts.now())) {
    try {
      const text = (await opts.summarise(summaryRequest(head, opts.focus), summaryBudget(head))).trim();
      if (text) {
        summary = `${SUMMARY_PREFIX}\n${text}`;
        source = 'model';
        opts.cooldown.succeed(opts.session);
      }
    } catch (err) {
      if (!(err instanceof SummaryRefused)) opts.cooldown.fail(opts.session, opts.now());
    }
  }
  summary ??= fallbackSummary(head);
  const seqs = head.map((m) => m.seq).filter((s): s is number => s !== undefined);
  return {
    messages: [{ role: 'user', content: summary }, ...messages.slice(cut)],
    summary, source, coversSeq: seqs.length ? Math.max(...seqs) : undefined, replaced: cut,
  };
}
