// An input the gateway answers itself, without a turn: today the polite refusal of a user who is
// not allowed (SPEC: never a model call). It goes through the ledger like any reply — dedupe row,
// admission (straight to terminal/completed) and a pending delivery obligation, one transaction —
// so it is sent by the delivery worker with the same retries, rate limits and markers.
import type { Db, Sql } from '../db.js';
import { admitIn, type AdmitInput } from './admissions.js';
import { initialDelivery } from './deliveries.js';
import { pgJson, pgText } from './pg-text.js';

export interface Answered {
  admissionId: string;
  /** Undefined for a duplicate (the dedupe id was seen before: nothing new to send). */
  obligationId?: string;
  duplicate: boolean;
}

/** Records `input` (its eventId decides duplicates) as answered with `reply`; the caller enqueues the delivery. */
export async function admitAnswered(db: Db, input: AdmitInput, reply: string): Promise<Answered> {
  return db.tx((sql) => admitAnsweredIn(sql, input, reply));
}

/** {@link admitAnswered} inside a caller's transaction (DM pairing records its request with the answer). */
export async function admitAnsweredIn(sql: Sql, input: AdmitInput, reply: string): Promise<Answered> {
  const admitted = await admitIn(sql, input);
  if (admitted.duplicate) return { admissionId: admitted.admissionId, duplicate: true };
  await sql.query(`UPDATE admissions SET state = 'terminal', outcome = 'completed', finished_at = now() WHERE id = $1`, [admitted.admissionId]);
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO delivery_obligations (id, admission_id, agent_id, session_id, platform, target, content, state, delivered_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, ${initialDelivery('$4')}) RETURNING id`,
    [admitted.admissionId, input.agentId, admitted.sessionId, input.platform, pgJson(input.replyTarget), pgText(reply)],
  );
  return { admissionId: admitted.admissionId, obligationId: rows[0]!.id, duplicate: false };
}
