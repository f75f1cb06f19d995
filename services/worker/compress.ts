// Compression records, `/compress` and hygiene pre-compression: the summary goes into the
// transcript as a marker row (history after it starts from the summary), and the session prompt is
// rebuilt after it.
import { appendTurnMessage, parseCommand, type Admission, type CompiledAgent, type Db, type Lease, type Logger, type TurnResult, type UsageTask } from '../core/index.js';
import { callModel, compress, estimateTokens, hygieneTokens, summaryRow, SummaryRefused, type ChatMessage, type CompressOptions, type ModelRoute, type TailOptions } from '../agent/index.js';
import type { LoopDeps } from './loop-deps.js';
import type { SpendAccounting } from './usage.js';
import { hasCallerConversation } from './turn-context.js';

export async function recordCompression(db: Db, lease: Lease, adm: Admission, summary: string, coversSeq: number | undefined): Promise<void> {
  // Caller-supplied history (OpenAI API) has no stored sequence: nothing to mark in the transcript.
  if (coversSeq === undefined) return;
  await appendTurnMessage(db, lease, adm.id, { role: 'system', content: summaryRow(summary, coversSeq) });
  await db.pool.query(`UPDATE sessions SET prompt_identity = NULL WHERE id = $1`, [adm.sessionId]);
}

/** The tail settings of this agent's turns: its context window and the worker's token budget. */
export function tailOptions(loop: LoopDeps, agent: CompiledAgent): TailOptions {
  return {
    ...(agent.model.contextWindow ? { contextWindow: agent.model.contextWindow } : {}),
    ...(loop.keepRecentTokens !== undefined ? { keepRecentTokens: loop.keepRecentTokens } : {}),
  };
}

export interface CompressCommand {
  db: Db;
  lease: Lease;
  adm: Admission;
  loop: LoopDeps;
  routes: ModelRoute[];
  signal: AbortSignal;
  tail: TailOptions;
  history: () => Promise<ChatMessage[]>;
  /** Spend caps before the summary call and its usage row after (the turn's own accounting). */
  accounting: SpendAccounting;
}

/** The loop's compressor, outside the loop: same tail rule, cool-down and summary call, accounted as `task`. */
function compressor(c: CompressCommand, task: UsageTask): CompressOptions {
  const clock = c.loop.clock;
  return {
    ...c.tail, session: c.adm.sessionId, now: () => (clock ? clock.now() : Date.now()), cooldown: c.loop.summaryCooldown,
    summarise: async (messages, maxTokens) => {
      const refusal = await c.accounting.beforeCall();
      if (refusal) throw new SummaryRefused(refusal);
      const res = await callModel({ routes: c.routes, request: { messages, signal: c.signal, maxOutputTokens: maxTokens }, cooldowns: c.loop.cooldowns, ...(clock ? { clock } : {}), ...(c.loop.policy ? { policy: c.loop.policy } : {}) });
      if (!res.ok) throw new Error(`summary call failed: ${res.error.reason}`);
      await c.accounting.onCall(res.completion, res.route, task);
      return res.completion.text;
    },
  };
}

/** Hermes' `/compress here [N]`: keep the last N turns (bare `here`: none, everything so far is summarised). */
const HERE = /^here(?:\s+(\d{1,4}))?$/i;

/**
 * `/compress [focus]`: summarise the conversation now (a recent tail stays), favouring the focus;
 * `/compress here [N]`: summarise all but the last N turns. Undefined for other messages.
 */
export async function compressReply(c: CompressCommand): Promise<TurnResult | undefined> {
  const command = parseCommand(c.adm.content);
  if (command?.name !== 'compress') return undefined;
  const history = (await c.history()).slice(0, -1); // without the /compress line itself
  const here = HERE.exec(command.args);
  const keepTurns = here ? Number(here[1] ?? 0) : undefined;
  const what = keepTurns !== undefined ? { keepTurns } : command.args ? { focus: command.args } : {};
  const out = await compress(history, { ...compressor(c, 'compress_command'), ...what });
  if (!out && keepTurns !== undefined) return { outcome: 'completed', reply: `Nothing to compress: the conversation has no more than ${keepTurns} turn(s).` };
  if (!out) return { outcome: 'completed', reply: 'Nothing to compress yet: the last 20 messages are always kept as they are.' };
  await recordCompression(c.db, c.lease, c.adm, out.summary, out.coversSeq);
  const how = out.source === 'model' ? 'a model-written summary' : 'an automatic digest (the summary call failed, was refused by a spend cap, or is cooling down)';
  return { outcome: 'completed', reply: `Compressed ${out.replaced} earlier messages into ${how}.` };
}

/**
 * Hygiene pre-compression (SPEC: at 85 %): a stored transcript estimated at 85 % of the context
 * window or more — a session that grew between turns, or whose agent moved to a smaller model —
 * is compressed before the turn loads its prompt, so the prompt is rebuilt for this very turn.
 * Returns the history the turn runs with. Hermes does this in its gateway; ours only admits, so the
 * worker does it at turn start (see docs/agent-loop.md).
 */
export async function precompress(c: CompressCommand, log: Logger): Promise<ChatMessage[]> {
  const history = await c.history();
  // Caller-supplied history (OpenAI API) is not a stored transcript; the loop still compresses it.
  if (hasCallerConversation(c.adm) || history.length < 4) return history;
  const tokens = estimateTokens(history);
  const limit = hygieneTokens(c.tail.contextWindow);
  if (tokens < limit) return history;
  const out = await compress(history, compressor(c, 'hygiene_compression'));
  if (!out) return history;
  await recordCompression(c.db, c.lease, c.adm, out.summary, out.coversSeq);
  log.info({ session: c.adm.sessionId, tokens, limit, replaced: out.replaced, source: out.source }, 'Compressed session history before the turn');
  return out.messages;
}
