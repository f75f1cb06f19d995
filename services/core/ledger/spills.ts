// Spill-over storage of oversized tool results: the full text of a result the model only saw as
// a preview block, written under the turn's lease (like every mid-turn append) and read back page
// by page — only from the session that stored it.
import type { Db, Sql } from '../db.js';
import { holdsLease, type Lease } from './leases.js';
import { LeaseLostError } from './turns.js';
import { pgText } from './pg-text.js';

export interface NewToolResultSpill {
  toolCallId: string;
  toolName: string;
  /** The result exactly as the tool returned it. */
  content: string;
}

/** One page of a stored result; `offset` and `size` count characters as JavaScript strings do. */
export type ToolResultSpillPage =
  | { ok: true; id: string; toolName: string; toolCallId: string; size: number; offset: number; text: string }
  | { ok: false; reason: 'not_found' | 'other_session' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Stores the full result for the admission's session if this lease still holds the turn;
 * LeaseLostError otherwise. Returns the id the preview block names.
 */
export async function saveToolResultSpill(db: Db, lease: Lease, admissionId: string, r: NewToolResultSpill): Promise<string> {
  const { rows } = await db.pool.query<{ id: string }>(
    `INSERT INTO tool_result_spills (id, session_id, admission_id, tool_call_id, tool_name, content, size)
     SELECT gen_random_uuid(), a.session_id, a.id, $4, $5, $6, $7 FROM admissions a
     WHERE a.id = $1 AND a.state = 'started' AND a.owner_instance_id = $2 AND a.owner_epoch = $3
       AND ${holdsLease('a.session_id', '$2::uuid', '$3::bigint')}
     RETURNING id`,
    [admissionId, lease.owner, lease.epoch, pgText(r.toolCallId), pgText(r.toolName), pgText(r.content), r.content.length],
  );
  if (!rows[0]) throw new LeaseLostError(admissionId);
  return rows[0].id;
}

/**
 * `limit` characters of stored result `id` from `offset`, if `sessionId` stored it. The slice is
 * taken here rather than in SQL: Postgres counts code points, the loop counts UTF-16 units.
 */
export async function readToolResultSpill(sql: Sql, sessionId: string, id: string, offset: number, limit: number): Promise<ToolResultSpillPage> {
  if (!UUID.test(id)) return { ok: false, reason: 'not_found' };
  const { rows } = await sql.query<{ session_id: string; tool_name: string; tool_call_id: string; content: string }>(
    `SELECT session_id, tool_name, tool_call_id, content FROM tool_result_spills WHERE id = $1`,
    [id],
  );
  const row = rows[0];
  if (!row) return { ok: false, reason: 'not_found' };
  if (row.session_id !== sessionId) return { ok: false, reason: 'other_session' };
  const start = Math.max(0, offset);
  return {
    ok: true, id, toolName: row.tool_name, toolCallId: row.tool_call_id, size: row.content.length,
    offset: start, text: row.content.slice(start, start + Math.max(0, limit)),
  };
}

/** Deletes stored results older than `retentionSeconds`; returns how many went. */
export async function pruneToolResultSpills(sql: Sql, retentionSeconds: number): Promise<number> {
  const { rowCount } = await sql.query(`DELETE FROM tool_result_spills WHERE created_at < now() - make_interval(secs => $1)`, [retentionSeconds]);
  return rowCount ?? 0;
}
