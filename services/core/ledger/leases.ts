// Session turn leases: one turn per session at a time across all workers. A lease is a row
// updated conditionally on (owner, expiry); every acquisition bumps the epoch, so (owner, epoch)
// names one holding and a late writer from an older holding is refused.
import type { Sql } from '../db.js';

export interface Lease {
  sessionId: string;
  owner: string;
  epoch: number;
}

/** Takes the lease when free, expired, or already ours; returns undefined when someone else holds it. */
export async function acquireLease(sql: Sql, sessionId: string, owner: string, ttlSeconds: number): Promise<Lease | undefined> {
  const { rows } = await sql.query<{ epoch: number }>(
    `INSERT INTO session_leases (session_id, owner_instance_id, epoch, acquired_at, renewed_at, expires_at)
     VALUES ($1, $2, 1, now(), now(), now() + make_interval(secs => $3))
     ON CONFLICT (session_id) DO UPDATE
       SET owner_instance_id = EXCLUDED.owner_instance_id, epoch = session_leases.epoch + 1,
           acquired_at = now(), renewed_at = now(), expires_at = EXCLUDED.expires_at
       WHERE session_leases.owner_instance_id IS NULL OR session_leases.expires_at < now()
     RETURNING epoch`,
    [sessionId, owner, ttlSeconds],
  );
  const epoch = rows[0]?.epoch;
  return epoch === undefined ? undefined : { sessionId, owner, epoch };
}

/** Extends our holding; false means the lease was lost (expired and taken, or released). */
export async function renewLease(sql: Sql, lease: Lease, ttlSeconds: number): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE session_leases SET renewed_at = now(), expires_at = now() + make_interval(secs => $4)
     WHERE session_id = $1 AND owner_instance_id = $2 AND epoch = $3 AND expires_at > now()`,
    [lease.sessionId, lease.owner, lease.epoch, ttlSeconds],
  );
  return rowCount === 1;
}

export async function releaseLease(sql: Sql, lease: Lease): Promise<void> {
  await sql.query(
    `UPDATE session_leases SET owner_instance_id = NULL, expires_at = NULL
     WHERE session_id = $1 AND owner_instance_id = $2 AND epoch = $3`,
    [lease.sessionId, lease.owner, lease.epoch],
  );
}

/** SQL predicate: (session `$s`, owner `$o`, epoch `$e`) currently holds an unexpired lease. */
export const holdsLease = (s: string, o: string, e: string) =>
  `EXISTS (SELECT 1 FROM session_leases sl WHERE sl.session_id = ${s} AND sl.owner_instance_id = ${o} AND sl.epoch = ${e} AND sl.expires_at > now())`;
