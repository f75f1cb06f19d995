// Delivery obligations: pending → attempting → delivered | failed → … → abandoned.
// Every attempt has a deadline (attempt_expires_at): an `attempting` row past it, or owned by a
// process known dead, is claimable again — a conditional update on the old owner stamp (instance
// id + its start time) — and such a re-send is flagged as a possible duplicate. So a row whose
// failure could not be recorded (a Postgres blip), or whose send hung, never stays attempting.
import type { Sql } from '../db.js';
import { ownerDead, type DeathRule, type Instance } from './instances.js';
import { pgText } from './pg-text.js';

export type DeliveryState = 'pending' | 'attempting' | 'delivered' | 'failed' | 'abandoned';

export interface Obligation {
  id: string;
  admissionId: string;
  agentId: string;
  sessionId: string;
  platform: string;
  target: unknown;
  content: string;
  state: DeliveryState;
  attempts: number;
  possibleDuplicate: boolean;
  createdAt: Date;
}

export const obligationColumns = `id, admission_id AS "admissionId", agent_id AS "agentId", session_id AS "sessionId", platform, target, content, state,
  attempts, possible_duplicate AS "possibleDuplicate", created_at AS "createdAt"`;

export const duplicateMarker = 'gateway restarted during delivery, so this may be a duplicate';

/**
 * Platforms whose replies are read by the caller, not pushed: the HTTP API (GET the admission,
 * its SSE stream, a waiting chat completion). Their obligation is delivered in the transaction
 * that stores the reply; waiting gateways are woken by pub/sub and poll Postgres anyway.
 */
export const pulledPlatforms: readonly string[] = ['api'];

/** SQL for a new obligation's state and delivered_at, given the platform in parameter `p`. */
export const initialDelivery = (p: string) =>
  `CASE WHEN ${p} = ANY('{${pulledPlatforms.join(',')}}'::text[]) THEN 'delivered'::delivery_state ELSE 'pending'::delivery_state END,
   CASE WHEN ${p} = ANY('{${pulledPlatforms.join(',')}}'::text[]) THEN now() END`;

/** SQL predicate on `d`: an attempt that will not be finished by its owner (deadline passed or owner dead). */
const abandonedAttempt = (ttl: string, steady: string) =>
  `(d.state = 'attempting' AND (d.attempt_expires_at < now() OR ${ownerDead('d.owner_instance_id', ttl, steady)}))`;

/**
 * Takes the obligation for one attempt of at most `attemptSeconds`: a due pending/failed row, or
 * an abandoned attempt (then marked as a possible duplicate). Undefined when not claimable now.
 */
export async function claimDelivery(sql: Sql, id: string, owner: Instance, rule: DeathRule, attemptSeconds: number): Promise<Obligation | undefined> {
  const { rows } = await sql.query<Obligation>(
    `UPDATE delivery_obligations d SET
       state = 'attempting', attempts = d.attempts + 1, owner_instance_id = $2, owner_started_at = $3, updated_at = now(),
       attempt_expires_at = now() + make_interval(secs => $6),
       possible_duplicate = d.possible_duplicate OR d.state = 'attempting'
     WHERE d.id = $1 AND ((d.state IN ('pending', 'failed') AND d.not_before <= now()) OR ${abandonedAttempt('$4', '$5')})
     RETURNING ${obligationColumns}`,
    [id, owner.id, owner.startedAt, rule.instanceTtlSeconds, rule.steady, attemptSeconds],
  );
  return rows[0];
}

const ownedBy = `id = $1 AND state = 'attempting' AND owner_instance_id = $2 AND owner_started_at = $3`;

export async function markDelivered(sql: Sql, id: string, owner: Instance): Promise<boolean> {
  const { rowCount } = await sql.query(`UPDATE delivery_obligations SET state = 'delivered', delivered_at = now(), last_error = NULL WHERE ${ownedBy}`, [id, owner.id, owner.startedAt]);
  return rowCount === 1;
}

/** A failed attempt: retried after `retryAfterSeconds`, or abandoned when out of attempts or too old. */
export async function markFailed(sql: Sql, id: string, owner: Instance, error: string, limits: { maxAttempts: number; maxAgeSeconds: number; retryAfterSeconds: number }): Promise<DeliveryState | undefined> {
  const { rows } = await sql.query<{ state: DeliveryState }>(
    `UPDATE delivery_obligations SET last_error = $4,
       state = CASE WHEN attempts >= $5 OR created_at < now() - make_interval(secs => $6) THEN 'abandoned'::delivery_state ELSE 'failed'::delivery_state END,
       not_before = now() + make_interval(secs => $7)
     WHERE ${ownedBy} RETURNING state`,
    [id, owner.id, owner.startedAt, pgText(error.slice(0, 2_000)), limits.maxAttempts, limits.maxAgeSeconds, limits.retryAfterSeconds],
  );
  return rows[0]?.state;
}

/** Flood control: wait until `notBefore` without spending an attempt. */
export async function deferDelivery(sql: Sql, id: string, owner: Instance, notBefore: Date): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE delivery_obligations SET state = 'pending', attempts = attempts - 1, not_before = $4 WHERE ${ownedBy}`,
    [id, owner.id, owner.startedAt, notBefore],
  );
  return rowCount === 1;
}

/** Obligations a sweeper should (re-)enqueue: due, or an abandoned attempt. */
export async function listDueDeliveries(sql: Sql, rule: DeathRule, graceSeconds: number, limit = 500): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>(
    `SELECT id FROM delivery_obligations d
     WHERE ((d.state IN ('pending', 'failed') AND d.not_before <= now() AND d.updated_at < now() - make_interval(secs => $3))
        OR ${abandonedAttempt('$1', '$2')})
     ORDER BY d.created_at LIMIT $4`,
    [rule.instanceTtlSeconds, rule.steady, graceSeconds, limit],
  );
  return rows.map((r) => r.id);
}

/** Settles obligations past the age limit (an attempt in progress only once its deadline passed); returns how many. */
export async function abandonExpired(sql: Sql, maxAgeSeconds: number): Promise<number> {
  const { rowCount } = await sql.query(
    `UPDATE delivery_obligations d SET state = 'abandoned', last_error = COALESCE(d.last_error, 'expired before delivery')
     WHERE d.created_at < now() - make_interval(secs => $1)
       AND (d.state IN ('pending', 'failed') OR (d.state = 'attempting' AND d.attempt_expires_at < now()))`,
    [maxAgeSeconds],
  );
  return rowCount ?? 0;
}

export async function oldestPendingAgeSeconds(sql: Sql): Promise<number> {
  const { rows } = await sql.query<{ age: number | null }>(
    `SELECT EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS age FROM delivery_obligations WHERE state IN ('pending', 'attempting', 'failed')`,
  );
  return rows[0]?.age ?? 0;
}

export async function getObligationForAdmission(sql: Sql, admissionId: string): Promise<Obligation | undefined> {
  const { rows } = await sql.query<Obligation>(`SELECT ${obligationColumns} FROM delivery_obligations WHERE admission_id = $1`, [admissionId]);
  return rows[0];
}
