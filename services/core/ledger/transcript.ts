// The agent loop's view of the transcript: tool calls and results with their effect
// disposition, appended mid-turn only while the writer holds the session lease (persist before
// execute), and read back with everything a provider needs to replay the conversation.
import type { Db, Sql } from '../db.js';
import { LeaseLostError } from './turns.js';
import { holdsLease, type Lease } from './leases.js';
import { appendMessage, type NewMessage, type Role } from './messages.js';

export interface TranscriptMessage {
  seq: number;
  role: Role;
  content: string;
  toolCalls: { id: string; name: string; arguments: string }[] | null;
  toolCallId: string | null;
  effectDisposition: 'applied' | 'none' | 'unknown' | null;
  interrupted: boolean;
  admissionId: string | null;
}

/** Appends `m` to the admission's session if this lease still holds it; LeaseLostError otherwise. */
export async function appendTurnMessage(db: Db, lease: Lease, admissionId: string, m: Omit<NewMessage, 'admissionId'>): Promise<{ id: number; seq: number }> {
  return db.tx(async (sql) => {
    const { rows } = await sql.query<{ session_id: string }>(
      `SELECT session_id FROM admissions
       WHERE id = $1 AND state = 'started' AND owner_instance_id = $2 AND owner_epoch = $3
         AND ${holdsLease('session_id', '$2::uuid', '$3::bigint')}
       FOR UPDATE`,
      [admissionId, lease.owner, lease.epoch],
    );
    if (!rows[0]) throw new LeaseLostError(admissionId);
    return appendMessage(sql, rows[0].session_id, { ...m, admissionId });
  });
}

export async function listTranscript(sql: Sql, sessionId: string, limit = 1_000): Promise<TranscriptMessage[]> {
  const { rows } = await sql.query<TranscriptMessage>(
    `SELECT seq, role, content, tool_calls AS "toolCalls", tool_call_id AS "toolCallId",
            effect_disposition AS "effectDisposition", interrupted, admission_id AS "admissionId"
     FROM (SELECT * FROM messages WHERE session_id = $1 ORDER BY seq DESC LIMIT $2) m ORDER BY seq`,
    [sessionId, limit],
  );
  return rows;
}
