// Compression records and `/compress`: the summary goes into the transcript as a marker row
// (history after it starts from the summary), and the session prompt is rebuilt after it.
import { appendTurnMessage, type Admission, type Db, type Lease, type TurnResult } from '../core/index.js';
import { callModel, compress, summaryRow, type ChatMessage, type ModelRoute } from '../agent/index.js';
import type { LoopDeps } from './turn-runner.js';

export async function recordCompression(db: Db, lease: Lease, adm: Admission, summary: string, coversSeq: number | undefined): Promise<void> {
  // Caller-supplied history (OpenAI API) has no stored sequence: nothing to mark in the transcript.
  if (coversSeq === undefined) return;
  await appendTurnMessage(db, lease, adm.id, { role: 'system', content: summaryRow(summary, coversSeq) });
  await db.pool.query(`UPDATE sessions SET prompt_identity = NULL WHERE id = $1`, [adm.sessionId]);
}

export interface CompressCommand {
  db: Db;
  lease: Lease;
  adm: Admission;
  loop: LoopDeps;
  routes: ModelRoute[];
  signal: AbortSignal;
  history: () => Promise<ChatMessage[]>;
}

/** `/compress`: summarise the conversation now (the last 20 messages stay). Undefined for other messages. */
export async function compressReply(c: CompressCommand): Promise<TurnResult | undefined> {
  if (c.adm.content.trim().toLowerCase() !== '/compress') return undefined;
  const history = (await c.history()).slice(0, -1); // without the /compress line itself
  const clock = c.loop.clock;
  const out = await compress(history, {
    session: c.adm.sessionId, now: () => (clock ? clock.now() : Date.now()), cooldown: c.loop.summaryCooldown,
    summarise: async (messages, maxTokens) => {
      const res = await callModel({ routes: c.routes, request: { messages, signal: c.signal, maxOutputTokens: maxTokens }, cooldowns: c.loop.cooldowns, ...(clock ? { clock } : {}), ...(c.loop.policy ? { policy: c.loop.policy } : {}) });
      if (!res.ok) throw new Error(`summary call failed: ${res.error.reason}`);
      return res.completion.text;
    },
  });
  if (!out) return { outcome: 'completed', reply: 'Nothing to compress yet: the last 20 messages are always kept as they are.' };
  await recordCompression(c.db, c.lease, c.adm, out.summary, out.coversSeq);
  const how = out.source === 'model' ? 'a model-written summary' : 'an automatic digest (the summary call failed or is cooling down)';
  return { outcome: 'completed', reply: `Compressed ${out.replaced} earlier messages into ${how}.` };
}
