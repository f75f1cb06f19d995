// An input the gateway answers itself, without a turn: today the polite refusal of a user who is
// not allowed (SPEC: never a model call). It goes through the ledger like any reply — dedupe row,
// admission (straight to terminal/completed) and a pending delivery obligation, one transaction —
// so it is sent by the delivery worker with the same retries, rate limits and markers.
import type { Db, Sql } from '../db.js';
import { admitIn, type AdmitInput, type Admitted } from './admissions.js';
import { initialDelivery } from './deliveries.js';
import { pgJson, pgText } from './pg-text.js';

export interface Answered {
  admissionId: string;
  sessionId: string;
  /** Undefined for a duplicate (the dedupe id was seen before: nothing new to send). */
  obligationId?: string;
  /** The obligation waits to be pushed (false on a pulled platform, api: already delivered). */
  deliveryPending?: boolean;
  duplicate: boolean;
}

/**
 * Computes the answer inside the admitting transaction (it may read or change the session, e.g.
 * `/status`, `/new`), once the admission exists; not called for a duplicate.
 */
export type AnswerFn = (sql: Sql, admitted: Admitted) => Promise<string>;

export interface AnswerOptions {
  /**
   * The answer rebinds the session key (`/new`): the key's row is locked for update before the
   * admission, so a second `/new` of the conversation waits for this one and then ends the session
   * this one made. (Admitted first, each would hold the key for share and then both wait to update
   * it: a deadlock, or the later one finding its session already left.)
   */
  rebindsKey?: boolean;
}

/**
 * Records `input` (its eventId decides duplicates) as answered with `reply` (a text, or computed by
 * `reply` in the same transaction); the caller enqueues the delivery.
 */
export async function admitAnswered(db: Db, input: AdmitInput, reply: string | AnswerFn, options: AnswerOptions = {}): Promise<Answered> {
  return db.tx((sql) => admitAnsweredIn(sql, input, reply, options));
}

/** {@link admitAnswered} inside a caller's transaction (DM pairing records its request with the answer). */
export async function admitAnsweredIn(sql: Sql, input: AdmitInput, reply: string | AnswerFn, options: AnswerOptions = {}): Promise<Answered> {
  if (options.rebindsKey) await sql.query(`SELECT 1 FROM session_keys WHERE agent_id = $1 AND key = $2 FOR UPDATE`, [input.agentId, input.sessionKey]);
  const admitted = await admitIn(sql, input);
  if (admitted.duplicate) return { admissionId: admitted.admissionId, sessionId: admitted.sessionId, duplicate: true };
  const text = typeof reply === 'string' ? reply : await reply(sql, admitted);
  await sql.query(`UPDATE admissions SET state = 'terminal', outcome = 'completed', finished_at = now() WHERE id = $1`, [admitted.admissionId]);
  return answerWith(sql, input, admitted, text);
}

/** The answer's delivery obligation, for an admission just made terminal. */
async function answerWith(sql: Sql, input: AdmitInput, admitted: Admitted, text: string): Promise<Answered> {
  const { rows } = await sql.query<{ id: string; state: string }>(
    `INSERT INTO delivery_obligations (id, admission_id, agent_id, session_id, platform, target, content, state, delivered_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, ${initialDelivery('$4')}) RETURNING id, state`,
    [admitted.admissionId, input.agentId, admitted.sessionId, input.platform, pgJson(input.replyTarget), pgText(text)],
  );
  return { admissionId: admitted.admissionId, sessionId: admitted.sessionId, obligationId: rows[0]!.id, deliveryPending: rows[0]!.state === 'pending', duplicate: false };
}

/**
 * Turns a just-admitted message that will not run into an answered one: `queued` → terminal
 * `discarded` with `why` as its error, and `reply` as its answer, in one transaction. The message
 * stays in the ledger. Undefined when it is no longer queued (a turn took it meanwhile).
 */
export async function answerInsteadOfRunning(db: Db, input: AdmitInput, admitted: Admitted, why: string, reply: string): Promise<Answered | undefined> {
  return db.tx(async (sql) => {
    const { rowCount } = await sql.query(
      `UPDATE admissions SET state = 'terminal', outcome = 'discarded', finished_at = now(), updated_at = now(), error = $2 WHERE id = $1 AND state = 'queued'`,
      [admitted.admissionId, why],
    );
    return rowCount ? answerWith(sql, input, admitted, reply) : undefined;
  });
}
