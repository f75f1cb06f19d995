// Admissions: one durable row per inbound input (ARCHITECTURE §4).
//   queued → started → terminal, or started → unknown when the owner died mid-turn.
// The transitions are also enforced by a trigger (prisma/migrations/*_ledger_state_machines).
import { randomUUID } from 'node:crypto';
import type { Db, Sql } from '../db.js';
import { holdsLease, type Lease } from './leases.js';
import { ownerDead, type DeathRule } from './instances.js';
import { pgId, pgJson, pgText } from './pg-text.js';
import { initialDelivery } from './deliveries.js';
import { commandWord } from '../commands.js';

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
  /** Whether a clarify question of this user waited in the session when it was admitted; absent: not known (ask). */
  clarifyWaiting?: boolean;
  /** Other messages queued in the session when it was admitted (counted up to {@link QUEUED_COUNTED}); absent for a duplicate. */
  queuedAhead?: number;
}

/** hermes_admit counts the messages queued ahead of a new one up to this many. */
export const QUEUED_COUNTED = 1_000;

export interface OwnSignal { kind: 'stop' | 'steer' | 'redirect'; consumed: boolean }

/** The clarify question an admission answered: its id, the admission that asked, whether that turn took the answer. */
export interface AnsweredClarification { id: string; admissionId: string; consumed: boolean }

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
  /**
   * The control signal this admission recorded (its kind, and whether a turn acted on it), as
   * read when it was claimed (hermes_claim_next); null: none; absent: not read (ask signalOfAdmission).
   */
  ownSignal?: OwnSignal | null;
  /** The clarify question this admission answered, as read when it was claimed; null: none; absent: not read. */
  answeredClarification?: AnsweredClarification | null;
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
 * Records one input durably: dedupe row, user, session (a suspended one is replaced, SPEC) and
 * admission, in one statement (hermes_admit). When this returns, the input survives any crash;
 * the caller acknowledges the platform only after.
 */
export async function admit(db: Db, input: AdmitInput): Promise<Admitted> {
  return admitIn(db.pool, input);
}

/** {@link admit} on a given connection (inside a caller's transaction). */
export async function admitIn(sql: Sql, input: AdmitInput): Promise<Admitted> {
  const { rows } = await sql.query<{ o_admission: string; o_session: string; o_user: string; o_duplicate: boolean; o_clarify_waiting: boolean | null; o_queued_ahead: number | null }>({
    name: 'hermes_admit', // prepared once per connection: no parse and plan per turn
    text: `SELECT o_admission, o_session, o_user, o_duplicate, o_clarify_waiting, o_queued_ahead FROM hermes_admit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    values: [randomUUID(), input.agentId, input.platform, pgId('conversation', input.sessionKey), pgId('user id', input.user.platformUserId),
      input.user.displayName == null ? null : pgText(input.user.displayName),
      input.eventId == null ? null : pgId('event id', input.eventId), input.intent ?? 'queue', pgText(input.content), pgJson(input.callerHistory), pgJson(input.replyTarget), pgJson(input.traceContext)],
  });
  const r = rows[0]!;
  return {
    admissionId: r.o_admission, sessionId: r.o_session, userId: r.o_user, duplicate: r.o_duplicate,
    ...(r.o_clarify_waiting !== null ? { clarifyWaiting: r.o_clarify_waiting } : {}),
    ...(r.o_queued_ahead !== null ? { queuedAhead: r.o_queued_ahead } : {}),
  };
}

const answeredFrom = (c: Record<string, unknown> | null): AnsweredClarification | null =>
  (c ? { id: c.id as string, admissionId: c.admission_id as string, consumed: c.consumed === true } : null);

/** An admission as hermes_claim_next returns it (to_jsonb of the row). */
export function admissionFromRow(j: Record<string, unknown>): Admission {
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return {
    id: j.id as string, seq: Number(j.seq), agentId: j.agent_id as string, sessionId: j.session_id as string, userId: (j.user_id as string | null) ?? null,
    platform: j.platform as string, intent: j.intent as Intent, state: j.state as AdmissionState, outcome: (j.outcome as AdmissionOutcome | null) ?? null,
    content: j.content as string, callerHistory: (j.caller_history as CallerMessage[] | null) ?? null, replyTarget: j.reply_target ?? null,
    traceContext: (j.trace_context as Record<string, string> | null) ?? null, ownerInstanceId: (j.owner_instance_id as string | null) ?? null,
    ownerEpoch: j.owner_epoch === null || j.owner_epoch === undefined ? null : Number(j.owner_epoch), resumeOf: (j.resume_of as string | null) ?? null,
    error: (j.error as string | null) ?? null, createdAt: date(j.created_at)!, startedAt: date(j.started_at), finishedAt: date(j.finished_at),
    ...('own_signal' in j ? { ownSignal: (j.own_signal as OwnSignal | null) ?? null } : {}),
    ...('answered_clarification' in j ? { answeredClarification: answeredFrom(j.answered_clarification as Record<string, unknown> | null) } : {}),
  };
}

/**
 * The lease holder takes the session's oldest queued admission, marks it `started` (before any
 * model call) and records the user's message in the transcript, in one statement
 * (hermes_claim_next), only while the lease holds. A resume adds nothing to the transcript.
 */
export async function startNextTurn(db: Db, lease: Lease): Promise<Admission | undefined> {
  const { rows } = await db.pool.query<{ adm: Record<string, unknown> | null }>(
    `SELECT hermes_claim_next($1::uuid, $2::uuid, $3::bigint) AS adm WHERE ${holdsLease('$1::uuid', '$2::uuid', '$3::bigint')}`,
    [lease.sessionId, lease.owner, lease.epoch],
  );
  const adm = rows[0]?.adm;
  return adm ? admissionFromRow(adm) : undefined;
}

/** True when `key` is bound to a session of the agent (a conversation it already took part in). */
export async function hasSessionKey(sql: Sql, agentId: string, key: string): Promise<boolean> {
  const { rowCount } = await sql.query(`SELECT 1 FROM session_keys WHERE agent_id = $1 AND key = $2`, [agentId, key]);
  return (rowCount ?? 0) > 0;
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

/** What the user of `platform` is told about an `unknown` turn: the two commands that clear it, as written there. */
export const unknownNoticeFor = (platform: string | undefined) =>
  `The previous turn was interrupted when the process running it stopped, and it was not run again because it may already have had effects. Send ${commandWord(platform, 'retry')} to run it again, or ${commandWord(platform, 'discard')} to drop it.`;

/** {@link unknownNoticeFor} on the HTTP API (and every platform that writes commands with `/`). */
export const unknownNotice = unknownNoticeFor('api');

/** Unattended platforms: nobody can answer /retry, so their unknown work settles as interrupted (SPEC); a child's then fails (ledger/subagents.ts). */
export const unattendedPlatforms = ['cron', 'kanban', 'subagent'];

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
         VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, ${initialDelivery('$4')}) ON CONFLICT (admission_id, call_key) DO NOTHING`,
        [r.id, r.agent_id, r.session_id, r.platform, pgJson(r.reply_target), r.state === 'unknown' ? unknownNoticeFor(r.platform) : interruptedNotice],
      );
    }
    return rows.map((r) => r.id);
  });
}

export const interruptedNotice = 'This run was interrupted when the process running it stopped, and it was not run again because it may already have had effects.';

