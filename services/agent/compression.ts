// Context compression: when the conversation nears the context window (or the provider says it
// overflowed), the older part is replaced by a summary; the last 20 messages stay verbatim and a
// tool call is never separated from its results. The summary comes from the model, or — when
// that fails or is cooling down — from a deterministic digest of at most 8000 characters.
import type { ChatMessage } from './messages.js';

export const PROTECT_LAST = 20;
export const TARGET_RATIO = 0.2;
export const MAX_ATTEMPTS = 3;
export const FALLBACK_MAX_CHARS = 8_000;
export const SUMMARY_PREFIX = '[Summary of the earlier conversation]';
const DEFAULT_WINDOW = 128_000;

/** 0.50 of the window, raised to 0.75 for windows under 512K tokens. */
export function thresholdTokens(contextWindow = DEFAULT_WINDOW): number {
  return Math.floor(contextWindow * (contextWindow < 512_000 ? 0.75 : 0.5));
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

/**
 * Where the protected tail starts: at most `protect` messages from the end, moved earlier while
 * it would begin with tool results (their call must stay with them). 0 = nothing to compress.
 */
export function splitPoint(messages: readonly ChatMessage[], protect = PROTECT_LAST): number {
  let cut = Math.max(0, messages.length - protect);
  while (cut > 0 && messages[cut]!.role === 'tool') cut--;
  return cut;
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

/** The request that asks the model for a summary of `head`. */
export function summaryRequest(head: readonly ChatMessage[]): ChatMessage[] {
  const transcript = head.map(line).join('\n');
  return [{ role: 'system', content: SUMMARY_INSTRUCTION }, { role: 'user', content: transcript }];
}

/** Max tokens for the summary: the target ratio of what it replaces (at least 256). */
export const summaryBudget = (head: readonly ChatMessage[]) => Math.max(256, Math.floor(estimateTokens(head) * TARGET_RATIO));

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
 * Compresses `messages` (the conversation, without system prompt). `summarise` asks the model;
 * when it throws or the session is cooling down, the deterministic digest is used.
 */
export async function compress(
  messages: readonly ChatMessage[],
  opts: { session: string; now: () => number; cooldown: SummaryCooldown; summarise: (req: ChatMessage[], maxTokens: number) => Promise<string> },
): Promise<Compressed | undefined> {
  const cut = splitPoint(messages);
  if (cut === 0) return undefined;
  const head = messages.slice(0, cut);
  let summary: string | undefined;
  let source: Compressed['source'] = 'fallback';
  if (!opts.cooldown.cooling(opts.session, opts.now())) {
    try {
      const text = (await opts.summarise(summaryRequest(head), summaryBudget(head))).trim();
      if (text) {
        summary = `${SUMMARY_PREFIX}\n${text}`;
        source = 'model';
        opts.cooldown.succeed(opts.session);
      }
    } catch {
      opts.cooldown.fail(opts.session, opts.now());
    }
  }
  summary ??= fallbackSummary(head);
  const seqs = head.map((m) => m.seq).filter((s): s is number => s !== undefined);
  return {
    messages: [{ role: 'user', content: summary }, ...messages.slice(cut)],
    summary, source, coversSeq: seqs.length ? Math.max(...seqs) : undefined, replaced: cut,
  };
}
