// Delivery obligations: pending → attempting → delivered | failed → … → abandoned.
// Every attempt has a deadline (attempt_expires_at): an `attempting` row past it, or owned by a
// process known dead, is claimable again — a conditional update on the old owner stamp (instance
// id + its start time) — and such a re-send is flagged as a possible duplicate. So a row whose
// failure could not be recorded (a Postgres blip), or whose send hung, never stays attempting.
import type { Sql } from '../db.js';
import { ownerDead, type DeathRule, type Instance } from './instances.js';
import { pgJson, pgText } from './pg-text.js';

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
  /** Pieces of the split reply already sent (a retry starts after them). */
  piecesSent: number;
  /** '' = the turn's reply; 'clarify:<id>' a clarify question; 'send:<tool call id>' a send_message call. */
  callKey: string;
  createdAt: Date;
}

export const obligationColumns = `id, admission_id AS "admissionId", agent_id AS "agentId", session_id AS "sessionId", platform, target, content, state,
  attempts, possible_duplicate AS "possibleDuplicate", pieces_sent AS "piecesSent", call_key AS "callKey", created_at AS "createdAt"`;

export const duplicateMarker = 'gateway restarted during delivery, so this may be a duplicate';

/**
 * Platforms whose replies are read by the caller, not pushed: the HTTP API (GET the admission,
 * its SSE stream, a waiting chat completion) and delegated children (`subagent`: their parent
 * reads the result, ledger/subagents.ts). Their obligation is delivered in the transaction
 * that stores the reply; waiting gateways are woken by pub/sub and poll Postgres anyway. Kanban
 * runs' replies are stored only (the task's outcome is what kanban_complete / kanban_block wrote).
 */
export const pulledPlatforms: readonly string[] = ['api', 'kanban', 'subagent'];

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
export async function markFailed(sql: Sql, id: string, owner: Instance, error: string, limits: { maxAttempts: number; maxAgeSeconds: number; retryAfterSeconds: number; uncertain?: boolean }): Promise<DeliveryState | undefined> {
  // `limits.uncertain`: a piece may have gone out without being recorded, so the re-send carries the duplicate marker.
  const { rows } = await sql.query<{ state: DeliveryState }>(
    `UPDATE delivery_obligations SET last_error = $4, possible_duplicate = possible_duplicate OR $8,
       state = CASE WHEN attempts >= $5 OR created_at < now() - make_interval(secs => $6) THEN 'abandoned'::delivery_state ELSE 'failed'::delivery_state END,
       not_before = now() + make_interval(secs => $7)
     WHERE ${ownedBy} RETURNING state`,
    [id, owner.id, owner.startedAt, pgText(error.slice(0, 2_000)), limits.maxAttempts, limits.maxAgeSeconds, limits.retryAfterSeconds, limits.uncertain ?? false],
  );
  return rows[0]?.state;
}

/** Records that the first `count` pieces of the reply were sent (only while this attempt owns the row). */
export async function recordPiecesSent(sql: Sql, id: string, owner: Instance, count: number): Promise<boolean> {
  const { rowCount } = await sql.query(`UPDATE delivery_obligations SET pieces_sent = GREATEST(pieces_sent, $4), updated_at = now() WHERE ${ownedBy}`, [id, owner.id, owner.startedAt, count]);
  return rowCount === 1;
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

/**
 * Abandoned attempts (deadline passed or owner dead) with their attempt count: their queue job may
 * still look active (a killed worker's job stays locked until BullMQ finds it stalled), so the
 * sweeper wakes them under a job id of their own (`<id>:retake:<attempts>`).
 */
export async function listAbandonedAttempts(sql: Sql, rule: DeathRule, limit = 500): Promise<{ id: string; attempts: number }[]> {
  const { rows } = await sql.query<{ id: string; attempts: number }>(
    `SELECT id, attempts FROM delivery_obligations d WHERE ${abandonedAttempt('$1', '$2')} ORDER BY d.created_at LIMIT $3`,
    [rule.instanceTtlSeconds, rule.steady, limit],
  );
  return rows;
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

/**
 * SPEC: settled rows (delivered, abandoned) are pruned after `maxAgeSeconds` (7 days), and each
 * session keeps at most `keepPerSession` (500) of them, the newest. Rows still owed are never pruned.
 */
export async function pruneDeliveries(sql: Sql, maxAgeSeconds: number, keepPerSession: number): Promise<number> {
  const { rowCount } = await sql.query(
    `DELETE FROM delivery_obligations d WHERE d.state IN ('delivered', 'abandoned') AND (
       d.created_at < now() - make_interval(secs => $1)
       OR d.id IN (SELECT id FROM (
         SELECT id, row_number() OVER (PARTITION BY session_id ORDER BY created_at DESC, id DESC) AS n
         FROM delivery_obligations WHERE state IN ('delivered', 'abandoned')) ranked WHERE n > $2))`,
    [maxAgeSeconds, keepPerSession],
  );
  return rowCount ?? 0;
}

/** Obligations by state (every state, zero included), for the `hermes_delivery_obligations` gauge. */
export async function countDeliveriesByState(sql: Sql): Promise<Record<DeliveryState, number>> {
  const { rows } = await sql.query<{ state: DeliveryState; n: number }>(`SELECT state, count(*)::int AS n FROM delivery_obligations GROUP BY state`);
  const counts: Record<DeliveryState, number> = { pending: 0, attempting: 0, delivered: 0, failed: 0, abandoned: 0 };
  for (const r of rows) counts[r.state] = r.n;
  return counts;
}

export async function oldestPendingAgeSeconds(sql: Sql): Promise<number> {
  const { rows } = await sql.query<{ age: number | null }>(
    `SELECT EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS age FROM delivery_obligations WHERE state IN ('pending', 'attempting', 'failed')`,
  );
  return rows[0]?.age ?? 0;
}

export async function getObligationForAdmission(sql: Sql, admissionId: string): Promise<Obligation | undefined> {
  const { rows } = await sql.query<Obligation>(`SELECT ${obligationColumns} FROM delivery_obligations WHERE admission_id = $1 AND call_key = ''`, [admissionId]);
  return rows[0];
}

/** Whether `ob` is the turn's own reply (not a clarify question or a send_message call made during it). */
export const isTurnReply = (ob: Pick<Obligation, 'callKey'>): boolean => !ob.callKey;

/**
 * An obligation a running turn makes besides its reply (a clarify question, a send_message call),
 * keyed by `callKey` within the admission: recording the same key again returns the row already
 * there, so one call is one obligation — never sent twice. `platform`/`target` name where it goes
 * (the turn's own chat, or another platform of the same agent).
 */
export async function recordCallObligation(sql: Sql, o: { admissionId: string; callKey: string; platform: string; target: unknown; content: string }): Promise<{ id: string; pending: boolean; created: boolean }> {
  const { rows } = await sql.query<{ id: string; state: string; created: boolean }>(
    `WITH a AS (SELECT agent_id, session_id FROM admissions WHERE id = $1),
     ins AS (
       INSERT INTO delivery_obligations (id, admission_id, call_key, agent_id, session_id, platform, target, content, state, delivered_at)
       SELECT gen_random_uuid(), $1, $2, a.agent_id, a.session_id, $3, $4, $5, ${initialDelivery('$3')} FROM a
       ON CONFLICT (admission_id, call_key) DO NOTHING RETURNING id, state)
     SELECT id, state::text, true AS created FROM ins
     UNION ALL SELECT id, state::text, false FROM delivery_obligations WHERE admission_id = $1 AND call_key = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
    [o.admissionId, o.callKey, o.platform, pgJson(o.target), pgText(o.content)],
  );
  const row = rows[0];
  if (!row) throw new Error(`admission ${o.admissionId} does not exist`);
  return { id: row.id, pending: row.state === 'pending', created: row.created };
}
