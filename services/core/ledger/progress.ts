// The "working…" message of a running turn on a chat platform (one per admission): the turn's
// worker records it after posting; the delivery that sends the reply takes it (and removes the
// message). Best effort: a lost row leaves one stale "working…" message, never a lost reply.
import type { Sql } from '../db.js';

export interface ProgressMessage { admissionId: string; platform: string; target: unknown; messageId: string }

export async function recordProgressMessage(sql: Sql, m: ProgressMessage): Promise<void> {
  await sql.query(
    `INSERT INTO progress_messages (admission_id, platform, target, message_id) VALUES ($1, $2, $3, $4) ON CONFLICT (admission_id) DO NOTHING`,
    [m.admissionId, m.platform, JSON.stringify(m.target), m.messageId],
  );
}

/** Removes and returns the admission's progress message, if any (exactly one taker). */
export async function takeProgressMessage(sql: Sql, admissionId: string): Promise<ProgressMessage | undefined> {
  const { rows } = await sql.query<ProgressMessage>(
    `DELETE FROM progress_messages WHERE admission_id = $1 RETURNING admission_id AS "admissionId", platform, target, message_id AS "messageId"`,
    [admissionId],
  );
  return rows[0];
}

/** Rows older than `maxAgeSeconds` (their replies long settled) are deleted; returns how many. */
export async function pruneProgressMessages(sql: Sql, maxAgeSeconds: number): Promise<number> {
  const { rowCount } = await sql.query(`DELETE FROM progress_messages WHERE created_at < now() - make_interval(secs => $1)`, [maxAgeSeconds]);
  return rowCount ?? 0;
}
