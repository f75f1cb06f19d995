// Admissions: one durable row per inbound input (ARCHITECTURE §4).
//   queued → started → terminal, or started → unknown when the owner died mid-turn.
// The transitions are also enforced by a trigger (prisma/migrations/*_ledger_state_machines).
import { randomUUID } from 'node:crypto';
import type { Db, Sql } from '../db.js';
import { holdsLease, type Lease } from './leases.js';
import { ownerDead, type DeathRule } from './instances.js';
import { appendMessage } from './messages.js';
import { pgJson, pgText } from './pg-text.js';
import { initialDelivery } from './deliveries.js';

export type AdmissionState = 'queued' | 'started' | 'unknown' | 'terminal';
export type AdmissionOutcome = 'completed' | 'failed' | 'interrupted' | 'discarded';
/** `resume` is internal: it continues a turn that a worker shutdown cut (turns.ts cutTurn). */
export type Intent = 'queue' | 'steer' | 'redirect' | 'resume';

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
  /** The admission this one continues (resume) or re-runs (/retry). */
  resumeOf: string | null;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

const admissionColumns = `id, seq, agent_id AS "agentId", session_id AS "sessionId", user_id AS "userId", platform, intent, state, outcome,
  content, caller_history AS "callerHistory", reply_target AS "replyTarget", trace_context AS "traceContext",
  owner_instance_id AS "ownerInstanceId", owner_epoch AS "ownerEpoch", resume_of AS "resumeOf", error,
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
      [admissionId, input.agentId, sessionId, userId, input.platform, input.intent ?? 'queue', pgText(input.content),
        pgJson(input.callerHistory), pgJson(input.replyTarget), pgJson(input.traceContext)],
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

/**
 * The session bound to `key`, created on first use; a `suspended` one (SPEC: cut by 3 shutdowns
 * in a row) is replaced by a new session. Concurrent first uses agree on one.
 */
async function sessionFor(sql: Sql, agentId: string, key: string, userId: string): Promise<string> {
  const found = await sql.query<{ session_id: string; state: string }>(
    `SELECT k.session_id, s.state FROM session_keys k JOIN sessions s ON s.id = k.session_id WHERE k.agent_id = $1 AND k.key = $2`, [agentId, key]);
  const bound = found.rows[0];
  if (bound && bound.state !== 'suspended') return bound.session_id;
  const sessionId = randomUUID();
  await sql.query(`INSERT INTO sessions (id, agent_id, user_id, session_key, updated_at) VALUES ($1, $2, $3, $4, now())`, [sessionId, agentId, userId, key]);
  // Rebinding a suspended session's key is conditional on the binding we read, so racing admits agree.
  const winner = await sql.query<{ session_id: string }>(
    `INSERT INTO session_keys (agent_id, key, session_id, updated_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (agent_id, key) DO UPDATE SET session_id = CASE WHEN session_keys.session_id = $4::uuid THEN EXCLUDED.session_id ELSE session_keys.session_id END, updated_at = now()
     RETURNING session_id`,
    [agentId, key, sessionId, bound?.session_id ?? null],
  );
  const chosen = winner.rows[0]!.session_id;
  if (chosen !== sessionId) await sql.query(`DELETE FROM sessions WHERE id = $1`, [sessionId]);
  return chosen;
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
    if (!adm) return undefined;
    // A resume continues the cut turn's transcript: the user's message is already there.
    if (adm.intent === 'resume') await sql.query(`UPDATE sessions SET state = 'active' WHERE id = $1 AND state = 'resume_pending'`, [adm.sessionId]);
    else await appendMessage(sql, adm.sessionId, { role: 'user', content: adm.content, admissionId: adm.id });
    return adm;
  });
}

/** The session's oldest queued admission (id and trace context), if any. */
export async function nextQueued(sql: Sql, sessionId: string): Promise<Pick<Admission, 'id' | 'traceContext'> | undefined> {
  const { rows } = await sql.query<Pick<Admission, 'id' | 'traceContext'>>(
    `SELECT id, trace_context AS "traceContext" FROM admissions WHERE session_id = $1 AND state = 'queued' ORDER BY seq LIMIT 1`, [sessionId]);
  return rows[0];
}

export async function getAdmission(sql: Sql, id: string): Promise<Admission | undefined> {
  const { rows } = await sql.query<Admission>(`SELECT ${admissionColumns} FROM admissions WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * The oldest queued admission of each session that nobody can be draining — no lease, an expired
 * one, or one whose owner is known dead — older than the grace period: its enqueue may have been
 * lost (Redis down or restarted between commit and enqueue). One per session, so sessions that
 * cannot start yet never starve the others (a session's holder drains the rest in order).
 */
export async function listStrandedQueued(sql: Sql, graceSeconds: number, rule: DeathRule, limit = 500): Promise<Pick<Admission, 'id' | 'sessionId' | 'traceContext'>[]> {
  const { rows } = await sql.query<Pick<Admission, 'id' | 'sessionId' | 'traceContext'>>(
    `SELECT id, "sessionId", "traceContext" FROM (
       SELECT DISTINCT ON (a.session_id) a.id, a.session_id AS "sessionId", a.seq, a.created_at, a.trace_context AS "traceContext" FROM admissions a
       WHERE a.state = 'queued'
         AND NOT EXISTS (SELECT 1 FROM session_leases sl WHERE sl.session_id = a.session_id AND sl.owner_instance_id IS NOT NULL
                         AND sl.expires_at > now() AND NOT ${ownerDead('sl.owner_instance_id', '$3', '$4')})
       ORDER BY a.session_id, a.seq) heads
     WHERE created_at < now() - make_interval(secs => $1)
     ORDER BY seq LIMIT $2`,
    [graceSeconds, limit, rule.instanceTtlSeconds, rule.steady],
  );
  return rows;
}

export const unknownNotice =
  'The previous turn was interrupted when the process running it stopped, and it was not run again because it may already have had effects. Send /retry to run it again, or /discard to drop it.';

/** Unattended platforms: nobody can answer /retry, so their unknown work settles as interrupted (SPEC). */
export const unattendedPlatforms = ['cron'];

/**
 * Recovery: `started` admissions whose holding — (owner, epoch) on the session lease — has ended
 * (expired, released, taken over) become `unknown`; never re-run, side effects may have happened.
 * Each gets a delivery obligation telling the user so. Unattended ones settle `interrupted`.
 * A late heartbeat alone never settles anything: the lease decides. Returns the settled ids.
 */
export async function settleOrphanedTurns(db: Db): Promise<string[]> {
  return db.tx(async (sql) => {
    const { rows } = await sql.query<{ id: string; agent_id: string; session_id: string; platform: string; reply_target: unknown; state: string }>(
      `UPDATE admissions a SET
         state = CASE WHEN a.platform = ANY($1) THEN 'terminal'::admission_state ELSE 'unknown'::admission_state END,
         outcome = CASE WHEN a.platform = ANY($1) THEN 'interrupted'::admission_outcome ELSE NULL END,
         finished_at = CASE WHEN a.platform = ANY($1) THEN now() ELSE NULL END,
         error = 'owner stopped mid-turn', updated_at = now()
       WHERE a.state = 'started' AND NOT ${holdsLease('a.session_id', 'a.owner_instance_id', 'a.owner_epoch')}
       RETURNING a.id, a.agent_id, a.session_id, a.platform, a.reply_target, a.state`,
      [unattendedPlatforms],
    );
    for (const r of rows) {
      await sql.query(
        `INSERT INTO delivery_obligations (id, admission_id, agent_id, session_id, platform, target, content, state, delivered_at)
         VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, ${initialDelivery('$4')}) ON CONFLICT (admission_id) DO NOTHING`,
        [r.id, r.agent_id, r.session_id, r.platform, pgJson(r.reply_target), r.state === 'unknown' ? unknownNotice : interruptedNotice],
      );
    }
    return rows.map((r) => r.id);
  });
}

export const interruptedNotice = 'This run was interrupted when the process running it stopped, and it was not run again because it may already have had effects.';

