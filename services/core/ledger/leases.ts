// Session turn leases: one turn per session at a time across all workers. A lease is a row
// updated conditionally on (owner, expiry); every acquisition bumps the epoch, so (owner, epoch)
// names one holding and a late writer from an older holding is refused. This fencing is the only
// thing that decides whether a turn's owner may still write: a holding ends when it expires, is
// released, or is taken over from an owner known dead (instances.ts) — never because a heartbeat
// merely looks late.
import type { Sql } from '../db.js';
import { ownerDead, type DeathRule } from './instances.js';

export interface Lease {
  sessionId: string;
  owner: string;
  epoch: number;
}

/**
 * Takes the lease when free, expired, or held by an owner known dead (the old holding is fenced
 * by the epoch bump in the same statement); undefined when a live holder has it.
 */
export async function acquireLease(sql: Sql, sessionId: string, owner: string, ttlSeconds: number, rule: DeathRule): Promise<Lease | undefined> {
  const { rows } = await sql.query<{ epoch: number }>(
    `INSERT INTO session_leases (session_id, owner_instance_id, epoch, acquired_at, renewed_at, expires_at)
     VALUES ($1, $2, 1, now(), now(), now() + make_interval(secs => $3))
     ON CONFLICT (session_id) DO UPDATE
       SET owner_instance_id = EXCLUDED.owner_instance_id, epoch = session_leases.epoch + 1,
           acquired_at = now(), renewed_at = now(), expires_at = EXCLUDED.expires_at
       WHERE session_leases.owner_instance_id IS NULL OR session_leases.expires_at < now()
          OR ${ownerDead('session_leases.owner_instance_id', '$4', '$5')}
     RETURNING epoch`,
    [sessionId, owner, ttlSeconds, rule.instanceTtlSeconds, rule.steady],
  );
  const epoch = rows[0]?.epoch;
  return epoch === undefined ? undefined : { sessionId, owner, epoch };
}

/** Extends our holding; false means the lease was lost (expired, taken over, or released). */
export async function renewLease(sql: Sql, lease: Lease, ttlSeconds: number): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE session_leases SET renewed_at = now(), expires_at = now() + make_interval(secs => $4)
     WHERE session_id = $1 AND owner_instance_id = $2 AND epoch = $3 AND expires_at > now()`,
    [lease.sessionId, lease.owner, lease.epoch, ttlSeconds],
  );
  return rowCount === 1;
}

/**
 * Gives the lease up; true when queued admissions are left in the session (someone must drain
 * them). The check is a statement of its own, after the release committed: an admission whose
 * wake-up found the lease still ours was committed before it, so the check sees it.
 */
export async function releaseLease(sql: Sql, lease: Lease): Promise<boolean> {
  await sql.query(
    `UPDATE session_leases SET owner_instance_id = NULL, expires_at = NULL WHERE session_id = $1 AND owner_instance_id = $2 AND epoch = $3`,
    [lease.sessionId, lease.owner, lease.epoch],
  );
  const { rows } = await sql.query<{ queued: boolean }>(`SELECT EXISTS (SELECT 1 FROM admissions WHERE session_id = $1 AND state = 'queued') AS queued`, [lease.sessionId]);
  return rows[0]?.queued ?? false;
}

/**
 * Frees the leases of owners known dead, so their sessions' turns can be settled and their
 * queues drained at once instead of after the lease TTL. Returns the sessions freed.
 */
export async function freeDeadOwnersLeases(sql: Sql, rule: DeathRule, limit = 500): Promise<string[]> {
  const { rows } = await sql.query<{ session_id: string }>(
    `UPDATE session_leases SET owner_instance_id = NULL, expires_at = NULL
     WHERE session_id IN (
       SELECT session_id FROM session_leases
       WHERE owner_instance_id IS NOT NULL AND expires_at > now() AND ${ownerDead('owner_instance_id', '$1', '$2')}
       LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING session_id`,
    [rule.instanceTtlSeconds, rule.steady, limit],
  );
  return rows.map((r) => r.session_id);
}

/** SQL predicate: (session `$s`, owner `$o`, epoch `$e`) currently holds an unexpired lease. */
export const holdsLease = (s: string, o: string, e: string) =>
  `EXISTS (SELECT 1 FROM session_leases sl WHERE sl.session_id = ${s} AND sl.owner_instance_id = ${o} AND sl.epoch = ${e} AND sl.expires_at > now())`;
