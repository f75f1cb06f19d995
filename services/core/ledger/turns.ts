// Ending a turn: the final message, its delivery obligation and the admission's `terminal`
// state are one transaction, written only while the writer still holds the session lease.
import type { Db, Sql } from '../db.js';
import { holdsLease, type Lease } from './leases.js';
import { appendMessage } from './messages.js';
import type { AdmissionOutcome } from './admissions.js';
import { pgJson, pgText } from './pg-text.js';
import { initialDelivery, pulledPlatforms } from './deliveries.js';
import { admissionFromRow, type Admission } from './admissions.js';
import type { DeathRule } from './instances.js';
import type { ModelCallUsageRow } from './usage.js';

export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor(readonly admissionId: string) {
    super(`session turn lease lost: admission ${admissionId} was not finished by this worker`);
  }
}

export interface TurnResult {
  outcome: Exclude<AdmissionOutcome, 'discarded'>;
  /** Final text for the user (the answer, or what went wrong in words they can act on). */
  reply: string;
  /** For failed turns: the technical reason, kept on the admission. */
  error?: string;
  interrupted?: boolean;
  /** For interrupted turns: the model's text before the cut (empty when none), without the notice. */
  partial?: string;
  usage?: unknown;
  /** Usage rows not written yet (the final answer's call), written in the transaction that ends the turn. */
  usageRows?: ModelCallUsageRow[];
  /** The session prompt this turn built, stored with its end instead of by a write of its own. */
  sessionPrompt?: { text: string; identity: string };
}

export interface FinishedTurn {
  obligationId: string;
  /** False when the reply needs no push (a pulled platform): nothing to enqueue. */
  deliveryPending: boolean;
  /** The turn's assistant message; null when it left none (interrupted before it said anything). */
  messageId: number | null;
  /** With `then: 'next'`: the session's next turn, claimed under the same lease. */
  next?: Admission;
  /** The lease was let go (`then: 'release'`, or 'next' with nothing queued). */
  released: boolean;
}

interface OwnedAdmission { session_id: string; agent_id: string; platform: string; reply_target: unknown; content: string; intent: string }

/** Locks the admission if (owner, epoch) still holds it and its session lease; LeaseLostError otherwise. */
async function lockStarted(sql: Sql, lease: Lease, admissionId: string): Promise<OwnedAdmission> {
  const { rows } = await sql.query<OwnedAdmission>(
    `SELECT session_id, agent_id, platform, reply_target, content, intent FROM admissions
     WHERE id = $1 AND state = 'started' AND owner_instance_id = $2 AND owner_epoch = $3
       AND ${holdsLease('session_id', '$2::uuid', '$3::bigint')}
     FOR UPDATE`,
    [admissionId, lease.owner, lease.epoch],
  );
  if (!rows[0]) throw new LeaseLostError(admissionId);
  return rows[0];
}

/** The obligation for a reply: `pending` for a platform to push to, already `delivered` for a pulled one (api). */
async function insertObligation(sql: Sql, admissionId: string, adm: OwnedAdmission, messageId: number | null, content: string): Promise<{ id: string; pending: boolean }> {
  const ob = await sql.query<{ id: string; state: string }>(
    `INSERT INTO delivery_obligations (id, admission_id, agent_id, session_id, message_id, platform, target, content, state, delivered_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, ${initialDelivery('$5')}) RETURNING id, state`,
    [admissionId, adm.agent_id, adm.session_id, messageId, adm.platform, pgJson(adm.reply_target), pgText(content)],
  );
  return { id: ob.rows[0]!.id, pending: ob.rows[0]!.state === 'pending' };
}

export interface FinishOptions {
  /**
   * What becomes of the lease: kept (the default), released, or used for the session's next queued
   * turn (which is claimed and returned; with none queued the lease is released).
   */
  then?: 'keep' | 'release' | 'next';
}

const usageRow = (u: ModelCallUsageRow) => ({
  agent_id: u.agentId, profile_key: u.profileKey, session_id: u.sessionId, user_id: u.userId, admission_id: u.admissionId, provider: u.provider,
  model: u.model, input_tokens: u.inputTokens, output_tokens: u.outputTokens, cache_read_tokens: u.cacheReadTokens, cache_write_tokens: u.cacheWriteTokens,
  reasoning_tokens: u.reasoningTokens, cost_usd: u.costUsd, cost_status: u.costStatus, task: u.task,
});

const LEASE_LOST = 'HL001';

/**
 * What the transcript keeps of a turn: its reply, except for an interrupted turn — then only what the
 * model said before the cut (`partial`; '' = no assistant message), never the runtime's notice about
 * it, which the model would read later as its own words. The user still gets the reply.
 */
const saidText = (result: TurnResult): string | null => (result.interrupted ? pgText(result.partial ?? '') : null);

/**
 * Final message + delivery obligation + `terminal` (+ deferred usage rows, + the next turn's
 * claim), one statement (hermes_finish_turn), only while the lease holds: LeaseLostError otherwise.
 */
export async function finishTurn(db: Db, lease: Lease, admissionId: string, result: TurnResult, opts: FinishOptions = {}): Promise<FinishedTurn> {
  try {
    const { rows } = await db.pool.query<{ o_obligation: string; o_pending: boolean; o_message: number | null; o_next: Record<string, unknown> | null; o_released: boolean }>({
      name: 'hermes_finish_turn', // prepared once per connection: no parse and plan per turn
      text: `SELECT * FROM hermes_finish_turn($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
      values: [admissionId, lease.owner, lease.epoch, result.outcome, pgText(result.reply), result.error === undefined ? null : pgText(result.error),
        result.interrupted ?? false, pgJson(result.usage), result.usageRows?.length ? pgJson(result.usageRows.map(usageRow)) : null, pulledPlatforms, opts.then ?? 'keep',
        result.sessionPrompt?.text ?? null, result.sessionPrompt?.identity ?? null, saidText(result)],
    });
    const r = rows[0]!;
    return {
      obligationId: r.o_obligation, deliveryPending: r.o_pending, messageId: r.o_message, released: r.o_released,
      ...(r.o_next ? { next: admissionFromRow(r.o_next) } : {}),
    };
  } catch (err) {
    if ((err as { code?: string }).code === LEASE_LOST) throw new LeaseLostError(admissionId);
    throw err;
  }
}

/** A new lease on a session and its first turn; undefined when a live holder has the lease or nothing is queued. */
export interface StartedTurn {
  lease: Lease;
  admission: Admission;
}

/**
 * Takes the session's lease (free, expired, or from an owner known dead) and claims its oldest
 * queued turn, in one statement (hermes_start_turn). Nothing queued: the lease is let go again.
 */
export async function startTurn(db: Db, sessionId: string, owner: string, ttlSeconds: number, rule: DeathRule): Promise<StartedTurn | undefined> {
  const { rows } = await db.pool.query<{ o_epoch: number; o_admission: Record<string, unknown> | null }>({
    name: 'hermes_start_turn', // prepared once per connection: no parse and plan per turn
    text: `SELECT o_epoch, o_admission FROM hermes_start_turn($1, $2, $3, $4, $5)`,
    values: [sessionId, owner, ttlSeconds, rule.instanceTtlSeconds, rule.steady],
  });
  const r = rows[0];
  if (!r?.o_admission) return undefined;
  return { lease: { sessionId, owner, epoch: Number(r.o_epoch) }, admission: admissionFromRow(r.o_admission) };
}

/** SPEC: a session still active at 3 consecutive shutdowns is suspended. */
export const SHUTDOWN_CUTS_BEFORE_SUSPEND = 3;

export const suspendedNotice =
  'This conversation was cut off by restarts of the service three times in a row, so it was suspended. Your next message starts a new conversation.';

export type CutTurn =
  | { resumed: true; resumeAdmissionId: string }
  | { resumed: false; obligationId: string; deliveryPending: boolean }
  /** The session had ended (`/new`): nothing resumes it and nothing more is said (the `/new` answer said the turn was stopped). */
  | { resumed: false; ended: true };

/**
 * A turn cut by a worker shutdown (the drain deadline passed) or by its worker's own fence (`why`
 * says which, for operators): its partial text is kept marked
 * interrupted and the admission ends `terminal/interrupted`. The session becomes `resume_pending`
 * with a queued `resume` admission that continues the transcript once (its reply goes where this
 * one's would have) — unless this is the third cut in a row: then the session is `suspended` and
 * the user is told. A turn of a session `/new` ended is not resumed: the session stays `ended`.
 * One transaction, only while the lease holds.
 */
export async function cutTurn(db: Db, lease: Lease, admissionId: string, partial: { reply: string; usage?: unknown }, why = 'a worker shutdown'): Promise<CutTurn> {
  return db.tx(async (sql) => {
    const adm = await lockStarted(sql, lease, admissionId);
    if (partial.reply) await appendMessage(sql, adm.session_id, { role: 'assistant', content: partial.reply, admissionId, interrupted: true, usage: partial.usage });
    await sql.query(
      `UPDATE admissions SET state = 'terminal', outcome = 'interrupted', error = $2, finished_at = now() WHERE id = $1`, [admissionId, `cut by ${why}`]);
    const { rows } = await sql.query<{ cuts: number }>(
      `UPDATE sessions SET shutdown_cuts = shutdown_cuts + 1,
         state = CASE WHEN shutdown_cuts + 1 >= $2 THEN 'suspended'::session_state ELSE 'resume_pending'::session_state END
       WHERE id = $1 AND state <> 'ended' RETURNING shutdown_cuts AS cuts`,
      [adm.session_id, SHUTDOWN_CUTS_BEFORE_SUSPEND],
    );
    if (!rows[0]) return { resumed: false, ended: true };
    if ((rows[0]?.cuts ?? 0) >= SHUTDOWN_CUTS_BEFORE_SUSPEND) {
      const ob = await insertObligation(sql, admissionId, adm, null, suspendedNotice);
      return { resumed: false, obligationId: ob.id, deliveryPending: ob.pending };
    }
    const { rows: [resume] } = await sql.query<{ id: string }>(
      `INSERT INTO admissions (id, agent_id, session_id, user_id, platform, intent, content, reply_target, trace_context, resume_of)
       SELECT gen_random_uuid(), agent_id, session_id, user_id, platform, 'resume', content, reply_target, trace_context, id
       FROM admissions WHERE id = $1 RETURNING id`,
      [admissionId],
    );
    return { resumed: true, resumeAdmissionId: resume!.id };
  });
}
