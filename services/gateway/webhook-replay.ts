// A signed webhook request is admitted once, whatever Idempotency-Key header it carries. The
// signature covers the timestamp and the body, not the headers: a captured request sent again
// inside the 300 s window with another (or a new) Idempotency-Key was a new event id, so a second
// turn ran and a second reply went to the callbackUrl. The request's signature is therefore also
// recorded as one of its dedupe rows (`sig:<sha256>`, the id an un-keyed request already has), and
// a request whose signature was seen is answered as the duplicate of the admission it made. A
// sender's retry re-signed with the same key is still one admission, by the key.
import type { Db } from '../core/index.js';
import { webhook } from '../platforms/index.js';

export type OnceSigned<T> = { replayOf: string } | { admitted: T };

/**
 * Runs `admit` unless this agent already admitted a request with `signature`. Requests with the
 * same signature wait for each other (a transaction-scoped advisory lock), so concurrent replays
 * are one admission; an `admit` that throws records nothing, and the sender may try again.
 * (With a pairing answer that made no admission nothing is recorded: pairing answers once anyway.)
 */
export async function admitOnceSigned<T extends { admissionId?: string | undefined }>(db: Db, agentId: string, signature: string, admit: () => Promise<T>): Promise<OnceSigned<T>> {
  const eventId = webhook.signatureEventId(signature);
  return db.tx(async (sql) => {
    await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`webhook-signature:${agentId}:${eventId}`]);
    const { rows } = await sql.query<{ admissionId: string }>(
      `SELECT admission_id AS "admissionId" FROM inbound_events WHERE agent_id = $1 AND source = 'webhook' AND event_id = $2`, [agentId, eventId]);
    if (rows[0]) return { replayOf: rows[0].admissionId };
    const admitted = await admit();
    // A pairing answer that stays silent made no admission: nothing to point a replay at.
    if (admitted.admissionId !== undefined) await sql.query(
      `INSERT INTO inbound_events (agent_id, source, event_id, admission_id) VALUES ($1, 'webhook', $2, $3) ON CONFLICT DO NOTHING`, [agentId, eventId, admitted.admissionId]);
    return { admitted };
  });
}
