// Admissions: one durable row per inbound input (ARCHITECTURE §4).
//   queued → started → terminal, or started → unknown when the owner died mid-turn.
// The transitions are also enforced by a trigger (prisma/migrations/*_ledger_state_machines).
import { randomUUID } from 'node:crypto';
import type { Db, Sql } from '../db.js';
import { holdsLease, type Lease } from './leases.js';
import { instanceAlive } from './instances.js';
import { appendMessage } from './messages.js';

export type AdmissionState = 'queued' | 'started' | 'unknown' | 'terminal';
export type AdmissionOutcome = 'completed' | 'failed' | 'interrupted' | 'discarded';
export type Intent = 'queue' | 'steer' | 'redirect';

export interface CallerMessage { role: 'system' | 'user' | 'assistant'; content: string }

export interface AdmitInput {
  agentId: string;
  platform: string;
  sessionKey: string;
  user: { platformUserId: string; displayName?: string };
  /** Platform event id (or Idempotency-Key): a second input with the same id is a duplicate. */
  eventId?: string;
  content: string;
  intent?: Intent;
  callerHistory?: CallerMessage[];
  replyTarget?: unknown;
  traceContext?: Record<string, string>;
}

export interface Admitted {
  admissionId: string;
  sessionId: string;
  userId: string;
  duplicate: boolean;
}

export interface Admission {
  id: string;
  seq: number;
  agentId: string;
  sessionId: string;
  userId: string | null;
  platform: string;
  intent: Intent;
  state: AdmissionState;
  outcome: AdmissionOutcome | null;
  content: string;
  callerHistory: CallerMessage[] | null;
  replyTarget: unknown;
  traceContext: Record<string, string> | null;
  ownerInstanceId: string | null;
  ownerEpoch: number | null;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

const admissionColumns = `id, seq, agent_id AS "agentId", session_id AS "sessionId", user_id AS "userId", platform, intent, state, outcome,
  content, caller_history AS "callerHistory", reply_target AS "replyTarget", trace_context AS "traceContext",
  owner_instance_id AS "ownerInstanceId", owner_epoch AS "ownerEpoch", error,
  created_at AS "createdAt", started_at AS "startedAt", finished_at AS "finishedAt"`;

/**
 * Records one input durably: dedupe row, user, session and admission in one transaction. When
 * this returns, the input survives any crash; the caller acknowledges the platform only after.
 */
export async function admit(db: Db, input: AdmitInput): Promise<Admitted> {
  const admissionId = randomUUID();
  return db.tx(async (sql) => {
    if (input.eventId !== undefined) {
      const dup = await claimEventId(sql, input.agentId, input.platform, input.eventId, admissionId);
      if (dup) return dup;
    }
    const userId = await upsertUser(sql, input.agentId, input.platform, input.user);
    const sessionId = await sessionFor(sql, input.agentId, input.sessionKey, userId);
    await sql.query(
      `INSERT INTO admissions (id, agent_id, session_id, user_id, platform, intent, content, caller_history, reply_target, trace_context)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [admissionId, input.agentId, sessionId, userId, input.platform, input.intent ?? 'queue', input.content,
        jsonOrNull(input.callerHistory), jsonOrNull(input.replyTarget), jsonOrNull(input.traceContext)],
    );
    return { admissionId, sessionId, userId, duplicate: false };
  });
}

async function claimEventId(sql: Sql, agentId: string, source: string, eventId: string, admissionId: string): Promise<Admitted | undefined> {
  const inserted = await sql.query(
    `INSERT INTO inbound_events (agent_id, source, event_id, admission_id) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
    [agentId, source, eventId, admissionId],
  );
  if (inserted.rowCount === 1) return undefined;
  const { rows } = await sql.query<{ admissionId: string; sessionId: string; userId: string }>(
    `SELECT a.id AS "admissionId", a.session_id AS "sessionId", a.user_id AS "userId"
     FROM inbound_events e JOIN admissions a ON a.id = e.admission_id
     WHERE e.agent_id = $1 AND e.source = $2 AND e.event_id = $3`,
    [agentId, source, eventId],
  );
  const row = rows[0];
  if (!row) throw new Error(`inbound event ${source}/${eventId} exists without its admission`);
  return { ...row, duplicate: true };
}

async function upsertUser(sql: Sql, agentId: string, platform: string, user: AdmitInput['user']): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO users (id, agent_id, platform, platform_user_id, display_name) VALUES (gen_random_uuid(), $1, $2, $3, $4)
     ON CONFLICT (agent_id, platform, platform_user_id) DO UPDATE SET display_name = COALESCE(EXCLUDED.display_name, users.display_name)
     RETURNING id`,
    [agentId, platform, user.platformUserId, user.displayName ?? null],
  );
  return rows[0]!.id;
}

/** The session bound to `key`, created on first use. Concurrent first uses agree on one. */
async function sessionFor(sql: Sql, agentId: string, key: string, userId: string): Promise<string> {
  const found = await sql.query<{ session_id: string }>(`SELECT session_id FROM session_keys WHERE agent_id = $1 AND key = $2`, [agentId, key]);
  if (found.rows[0]) return found.rows[0].session_id;
  const sessionId = randomUUID();
  await sql.query(`INSERT INTO sessions (id, agent_id, user_id, session_key, updated_at) VALUES ($1, $2, $3, $4, now())`, [sessionId, agentId, userId, key]);
  const bound = await sql.query<{ session_id: string }>(
    `INSERT INTO session_keys (agent_id, key, session_id, updated_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (agent_id, key) DO UPDATE SET key = EXCLUDED.key RETURNING session_id`,
    [agentId, key, sessionId],
  );
  const winner = bound.rows[0]!.session_id;
  if (winner !== sessionId) await sql.query(`DELETE FROM sessions WHERE id = $1`, [sessionId]);
  return winner;
}

/**
 * The lease holder takes the session's oldest queued admission, marks it `started` (before any
 * model call) and records the user's message in the transcript, in one transaction.
 */
export async function startNextTurn(db: Db, lease: Lease): Promise<Admission | undefined> {
  return db.tx(async (sql) => {
    const { rows } = await sql.query<Admission>(
      `UPDATE admissions SET state = 'started', owner_instance_id = $2, owner_epoch = $3, started_at = now(), updated_at = now()
       WHERE id = (SELECT id FROM admissions WHERE session_id = $1 AND state = 'queued' ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
         AND ${holdsLease('$1::uuid', '$2::uuid', '$3::bigint')}
       RETURNING ${admissionColumns}`,
      [lease.sessionId, lease.owner, lease.epoch],
    );
    const adm = rows[0];
    if (adm) await appendMessage(sql, adm.sessionId, { role: 'user', content: adm.content, admissionId: adm.id });
    return adm;
  });
}

export async function hasQueued(sql: Sql, sessionId: string): Promise<boolean> {
  const { rowCount } = await sql.query(`SELECT 1 FROM admissions WHERE session_id = $1 AND state = 'queued' LIMIT 1`, [sessionId]);
  return (rowCount ?? 0) > 0;
}

export async function getAdmission(sql: Sql, id: string): Promise<Admission | undefined> {
  const { rows } = await sql.query<Admission>(`SELECT ${admissionColumns} FROM admissions WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * Queued admissions older than the grace period in sessions no live worker is draining: their
 * enqueue may have been lost (Redis down or restarted between commit and enqueue).
 */
export async function listStrandedQueued(sql: Sql, graceSeconds: number, instanceTtlSeconds: number, limit = 500): Promise<Pick<Admission, 'id' | 'traceContext'>[]> {
  const { rows } = await sql.query<Pick<Admission, 'id' | 'traceContext'>>(
    `SELECT id, trace_context AS "traceContext" FROM admissions a
     WHERE state = 'queued' AND created_at < now() - make_interval(secs => $1)
       AND NOT EXISTS (SELECT 1 FROM session_leases sl WHERE sl.session_id = a.session_id AND sl.expires_at > now()
                       AND ${instanceAlive('sl.owner_instance_id', '$3')})
     ORDER BY seq LIMIT $2`,
    [graceSeconds, limit, instanceTtlSeconds],
  );
  return rows;
}

export const unknownNotice =
  'The previous turn was interrupted when the process running it stopped, and it was not run again because it may already have had effects. Send /retry to run it again, or /discard to drop it.';

/**
 * Recovery: `started` admissions whose owner is dead (no heartbeat within `instanceTtlSeconds`)
 * or no longer holds the session lease become `unknown`. Never re-run: side effects may have
 * happened. Each gets a delivery obligation telling the user so. Returns the settled ids.
 */
export async function settleOrphanedTurns(db: Db, instanceTtlSeconds: number): Promise<string[]> {
  return db.tx(async (sql) => {
    const { rows } = await sql.query<{ id: string; agent_id: string; session_id: string; platform: string; reply_target: unknown }>(
      `UPDATE admissions a SET state = 'unknown', error = 'owner stopped mid-turn', updated_at = now()
       WHERE a.state = 'started'
         AND NOT (${instanceAlive('a.owner_instance_id', '$1')} AND ${holdsLease('a.session_id', 'a.owner_instance_id', 'a.owner_epoch')})
       RETURNING a.id, a.agent_id, a.session_id, a.platform, a.reply_target`,
      [instanceTtlSeconds],
    );
    for (const r of rows) {
      await sql.query(
        `INSERT INTO delivery_obligations (id, admission_id, agent_id, session_id, platform, target, content)
         VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6) ON CONFLICT (admission_id) DO NOTHING`,
        [r.id, r.agent_id, r.session_id, r.platform, jsonOrNull(r.reply_target), unknownNotice],
      );
    }
    return rows.map((r) => r.id);
  });
}

const jsonOrNull = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
