// Clearing `unknown` turns: only a human does it (SPEC), with `/discard` (drop them) or `/retry`
// (run the latest one again as this turn). Both run as the control admission's own turn, under
// its session lease, so they serialise with every other turn of the session.
import type { Db, Sql } from '../db.js';
import { holdsLease, type Lease } from './leases.js';
import { LeaseLostError } from './turns.js';

async function lockOwnTurn(sql: Sql, lease: Lease, admissionId: string): Promise<string> {
  const { rows } = await sql.query<{ session_id: string }>(
    `SELECT session_id FROM admissions WHERE id = $1 AND state = 'started' AND owner_instance_id = $2 AND owner_epoch = $3
       AND ${holdsLease('session_id', '$2::uuid', '$3::bigint')} FOR UPDATE`,
    [admissionId, lease.owner, lease.epoch],
  );
  if (!rows[0]) throw new LeaseLostError(admissionId);
  return rows[0].session_id;
}

/** `/discard`: every `unknown` admission of the session becomes `terminal/discarded`; returns how many. */
export async function discardUnknown(db: Db, lease: Lease, admissionId: string): Promise<number> {
  return db.tx(async (sql) => {
    const sessionId = await lockOwnTurn(sql, lease, admissionId);
    const { rowCount } = await sql.query(
      `UPDATE admissions SET state = 'terminal', outcome = 'discarded', finished_at = now(), error = $2
       WHERE session_id = $1 AND state = 'unknown'`,
      [sessionId, `discarded by ${admissionId}`],
    );
    return rowCount ?? 0;
  });
}

export interface Retried {
  /** The unknown admission this turn re-runs. */
  id: string;
  content: string;
  /** Unknown admissions still left in the session after this one. */
  remaining: number;
}

/**
 * `/retry`: the session's latest `unknown` admission becomes `terminal/discarded` (retried by this
 * one) and this admission records it as `resume_of`; undefined when there is none.
 */
export async function takeUnknownForRetry(db: Db, lease: Lease, admissionId: string): Promise<Retried | undefined> {
  return db.tx(async (sql) => {
    const sessionId = await lockOwnTurn(sql, lease, admissionId);
    const { rows } = await sql.query<{ id: string; content: string }>(
      `UPDATE admissions SET state = 'terminal', outcome = 'discarded', finished_at = now(), error = $2
       WHERE id = (SELECT id FROM admissions WHERE session_id = $1 AND state = 'unknown' ORDER BY seq DESC LIMIT 1 FOR UPDATE)
       RETURNING id, content`,
      [sessionId, `retried by ${admissionId}`],
    );
    const taken = rows[0];
    if (!taken) return undefined;
    await sql.query(`UPDATE admissions SET resume_of = $2 WHERE id = $1`, [admissionId, taken.id]);
    const left = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM admissions WHERE session_id = $1 AND state = 'unknown'`, [sessionId]);
    return { id: taken.id, content: taken.content, remaining: left.rows[0]?.n ?? 0 };
  });
}
