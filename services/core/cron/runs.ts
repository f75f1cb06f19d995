// The cron ledger: compiled CronJobs (cron_schedules) and their runs (cron_runs). A fired slot is
// one transaction — next_run_at advanced, the slot recorded as pending, its run row and its
// admission (platform `cron`, a fresh session) — so a slot is admitted at most once, even across a
// scheduler failover, and never lost once due: the admission is durable before anything is
// enqueued, and the pending slot tells the next scheduler to enqueue it if we died first.
import { z } from 'zod';
import type { Db, Sql } from '../db.js';
import { admitIn } from '../ledger/admissions.js';
import { resumeChain } from '../ledger/admission-status.js';
import type { CronDelivery } from './deliver.js';

/** What the scheduler reads of a stored CronJob spec (the operator validated it). */
export const storedCronSpecSchema = z.object({
  prompt: z.string(),
  skills: z.array(z.string()).default([]),
  deliver: z.string().optional(),
  concurrencyPolicy: z.enum(['Forbid', 'Allow', 'Replace']).default('Forbid'),
  catchUpMissed: z.boolean().default(false),
  startingDeadlineSeconds: z.number().int().positive().optional(),
  successfulRunsHistoryLimit: z.number().int().min(0).default(3),
  failedRunsHistoryLimit: z.number().int().min(0).default(1),
}).passthrough();
export type StoredCronSpec = z.infer<typeof storedCronSpecSchema>;

export interface CronRow {
  id: string;
  namespace: string;
  name: string;
  agentName: string;
  /** The agent's id, null when no such agent is compiled. */
  agentId: string | null;
  schedule: string;
  timeZone: string;
  spec: unknown;
  suspend: boolean;
  nextRunAt: Date | null;
  pendingSlot: Date | null;
  runNowAt: Date | null;
}

const rowColumns = `s.id, s.namespace, s.name, s.agent_name AS "agentName", ag.id AS "agentId", s.schedule, s.time_zone AS "timeZone", s.spec,
  s.suspend, s.next_run_at AS "nextRunAt", s.pending_slot AS "pendingSlot", s.run_now_at AS "runNowAt"`;
const fromSchedules = `cron_schedules s LEFT JOIN agents ag ON ag.namespace = s.namespace AND ag.name = s.agent_name`;

/** Schedules with work at `now`: due, a pending slot to enqueue, or a run-now request. Oldest due first. */
export async function listDueSchedules(sql: Sql, now: Date, limit: number): Promise<CronRow[]> {
  const { rows } = await sql.query<CronRow>(
    `SELECT ${rowColumns} FROM ${fromSchedules}
     WHERE (NOT s.suspend AND s.next_run_at <= $1) OR s.pending_slot IS NOT NULL OR s.run_now_at IS NOT NULL
     ORDER BY s.next_run_at NULLS FIRST LIMIT $2`, [now, limit]);
  return rows;
}

/** The rows, locked for this transaction; those another scheduler holds are left out (SKIP LOCKED). */
export async function lockSchedules(sql: Sql, ids: string[]): Promise<CronRow[]> {
  const { rows } = await sql.query<CronRow>(`SELECT ${rowColumns} FROM ${fromSchedules} WHERE s.id = ANY($1::uuid[]) ORDER BY s.id FOR UPDATE OF s SKIP LOCKED`, [ids]);
  return rows;
}

/**
 * A run's turn, `ch` (join it LATERAL, from `cron_runs r`): the run's admission and the `resume`
 * admissions continuing it after graceful-shutdown cuts (the `continuedBy` chain, admission-status.ts).
 * `ch.last` is the admission that carries the run now — the run goes on while it is queued or
 * started and ends with its outcome and reply; a cut admission ends `interrupted` although its run
 * goes on. `ch.ids`: all of them (each paid for its model calls); `ch.first_started`: when the run's
 * turn first started. For a run without an admission (skipped), `ch.last` is null.
 */
const runChain = `LATERAL (
    SELECT (array_agg(c.id ORDER BY c.hop DESC))[1] AS last, array_agg(c.id) AS ids, min(x.started_at) AS first_started
    FROM (${resumeChain('r.admission_id')}) c LEFT JOIN admissions x ON x.id = c.id) ch`;

export interface ActiveRun {
  runId: string;
  slot: Date;
  trigger: string;
  /** The admission carrying the run now: its own, or the resume continuing it after a shutdown cut (what Replace discards or stops). */
  admissionId: string;
  sessionId: string;
  admissionState: 'queued' | 'started';
}

/** Runs of the schedule whose turn has not ended (its last admission, resumes followed, queued or started). */
export async function activeRuns(sql: Sql, scheduleId: string): Promise<ActiveRun[]> {
  const { rows } = await sql.query<ActiveRun>(
    `SELECT r.id AS "runId", r.slot, r.trigger, a.id AS "admissionId", a.session_id AS "sessionId", a.state AS "admissionState"
     FROM cron_runs r CROSS JOIN ${runChain} JOIN admissions a ON a.id = ch.last
     WHERE r.schedule_id = $1 AND r.state = 'dispatched' AND a.state IN ('queued', 'started') ORDER BY r.slot`, [scheduleId]);
  return rows;
}

/** {@link activeRuns} of several schedules at once, by schedule id. */
export async function activeRunsOf(sql: Sql, scheduleIds: string[]): Promise<Map<string, ActiveRun[]>> {
  const { rows } = await sql.query<ActiveRun & { scheduleId: string }>(
    `SELECT r.schedule_id AS "scheduleId", r.id AS "runId", r.slot, r.trigger, a.id AS "admissionId", a.session_id AS "sessionId", a.state AS "admissionState"
     FROM cron_runs r CROSS JOIN ${runChain} JOIN admissions a ON a.id = ch.last
     WHERE r.schedule_id = ANY($1::uuid[]) AND r.state = 'dispatched' AND a.state IN ('queued', 'started') ORDER BY r.slot`, [scheduleIds]);
  const out = new Map<string, ActiveRun[]>();
  for (const { scheduleId, ...run } of rows) out.set(scheduleId, [...(out.get(scheduleId) ?? []), run]);
  return out;
}

export type Trigger = 'schedule' | 'manual';

/** The fresh session of one run: a key of its own per slot, so no run sees another's conversation. */
export const cronSessionKey = (row: Pick<CronRow, 'namespace' | 'name'>, slot: Date, trigger: Trigger) =>
  `cron:${row.namespace}/${row.name}:${trigger}:${slot.toISOString()}`;

/** Reply target of a cron admission: the worker's `cron` delivery adapter reads it. */
export interface CronReplyTarget { kind: 'cron'; cronJob: string; deliver: CronDelivery; skills: string[] }

export interface SlotWrite {
  next: Date | null;
  /** Skipped slots, recorded with their reason. */
  skipped: { slot: Date; trigger: Trigger; reason: string; message: string }[];
  fire?: { slot: Date; trigger: Trigger; content: string; replyTarget: CronReplyTarget };
  /** A run-now request acted on (cleared only if it is still the same request). */
  runNowAt?: Date;
}

export interface Fired { scheduleId: string; runId: string; admissionId: string; sessionId: string; slot: Date; trigger: Trigger }

/** The one write of a tick for a locked schedule (inside the caller's transaction). */
export async function writeSlot(sql: Sql, row: CronRow, w: SlotWrite): Promise<Fired | undefined> {
  await sql.query(
    `UPDATE cron_schedules SET next_run_at = $2, pending_slot = $3, last_run_at = COALESCE($4, last_run_at),
       run_now_at = CASE WHEN run_now_at = $5 THEN NULL ELSE run_now_at END, updated_at = now() WHERE id = $1`,
    [row.id, w.next, w.fire?.slot ?? null, w.fire?.trigger === 'schedule' ? w.fire.slot : null, w.runNowAt ?? null]);
  for (const s of w.skipped) {
    await sql.query(
      `INSERT INTO cron_runs (id, schedule_id, slot, trigger, state, reason, outcome, finished_at)
       VALUES (gen_random_uuid(), $1, $2, $3, 'skipped', $4, 'skipped', now()) ON CONFLICT (schedule_id, slot, trigger) DO NOTHING`,
      [row.id, s.slot, s.trigger, `${s.reason}: ${s.message}`]);
  }
  if (!w.fire || !row.agentId) return undefined;
  const { slot, trigger } = w.fire;
  const cronJob = `${row.namespace}/${row.name}`;
  const adm = await admitIn(sql, {
    agentId: row.agentId, platform: 'cron', sessionKey: cronSessionKey(row, slot, trigger),
    user: { platformUserId: `cronjob:${cronJob}`, displayName: `CronJob ${cronJob}` },
    eventId: `cron:${row.id}:${trigger}:${slot.toISOString()}`, content: w.fire.content, replyTarget: w.fire.replyTarget,
  });
  if (adm.duplicate) return undefined; // this slot was admitted before: never twice
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO cron_runs (id, schedule_id, slot, trigger, state, admission_id, session_id)
     VALUES (gen_random_uuid(), $1, $2, $3, 'dispatched', $4, $5) RETURNING id`,
    [row.id, slot, trigger, adm.admissionId, adm.sessionId]);
  return { scheduleId: row.id, runId: rows[0]!.id, admissionId: adm.admissionId, sessionId: adm.sessionId, slot, trigger };
}

/** The admissions of the rows' pending slots (admitted by a scheduler that may have died before enqueueing them), by schedule id. */
export async function pendingAdmissions(sql: Sql, rows: CronRow[]): Promise<Map<string, { admissionId: string; sessionId: string }>> {
  const pending = rows.filter((r) => r.pendingSlot);
  if (pending.length === 0) return new Map();
  const { rows: found } = await sql.query<{ scheduleId: string; admissionId: string; sessionId: string }>(
    `SELECT DISTINCT ON (r.schedule_id) r.schedule_id AS "scheduleId", r.admission_id AS "admissionId", r.session_id AS "sessionId"
     FROM cron_runs r JOIN unnest($1::uuid[], $2::timestamptz[]) AS p(id, slot) ON r.schedule_id = p.id AND r.slot = p.slot
     WHERE r.admission_id IS NOT NULL ORDER BY r.schedule_id, r.created_at DESC`,
    [pending.map((r) => r.id), pending.map((r) => r.pendingSlot)]);
  return new Map(found.map(({ scheduleId, ...a }) => [scheduleId, a]));
}

/** The slots' turn jobs are enqueued: their pending marks go (each only if it is still that slot). */
export async function clearPendingSlots(sql: Sql, slots: { scheduleId: string; slot: Date }[]): Promise<void> {
  if (slots.length === 0) return;
  await sql.query(
    `UPDATE cron_schedules s SET pending_slot = NULL FROM unnest($1::uuid[], $2::timestamptz[]) AS p(id, slot) WHERE s.id = p.id AND s.pending_slot = p.slot`,
    [slots.map((s) => s.scheduleId), slots.map((s) => s.slot)]);
}

/** Replace: a queued run that never started is discarded; returns whether it was. */
export async function discardQueuedRun(sql: Sql, run: ActiveRun): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE admissions SET state = 'terminal', outcome = 'discarded', finished_at = now(), error = 'replaced by a newer run of its CronJob', updated_at = now()
     WHERE id = $1 AND state = 'queued'`, [run.admissionId]);
  await sql.query(`UPDATE cron_runs SET reason = 'Replaced: a newer run of the CronJob replaced it' WHERE id = $1`, [run.runId]);
  return rowCount === 1;
}

/**
 * Replace: marks a started run as replaced (its turn is stopped by a /stop signal in its session).
 * Its reply (the interrupted notice, or what it had written) is stored only: the run's admission
 * delivers `local` from now on, so the channel hears the newer run, not "interrupted … /retry".
 */
export async function markReplaced(sql: Sql, run: ActiveRun): Promise<void> {
  await sql.query(`UPDATE cron_runs SET reason = 'Replaced: a newer run of the CronJob stopped it' WHERE id = $1`, [run.runId]);
  await sql.query(
    `UPDATE admissions SET reply_target = jsonb_set(reply_target::jsonb, '{deliver}', '{"platform":"local"}'::jsonb), updated_at = now()
     WHERE id = $1 AND state = 'started' AND reply_target->>'kind' = 'cron'`, [run.admissionId]);
}

/**
 * Copies ended turns into their runs — a turn ends with the last admission of its chain (resumes
 * after shutdown cuts followed, {@link runChain}): its outcome and end, its reply's obligation and
 * delivery state; the start of the first; tokens and cost of them all. And the last outcome onto
 * the schedule. Returns the schedules touched.
 */
export async function syncFinishedRuns(sql: Sql): Promise<string[]> {
  const { rows } = await sql.query<{ scheduleId: string }>(
    `WITH ended AS (
       SELECT r.id, a.outcome::text AS outcome, ch.first_started, a.finished_at, d.id AS obligation_id, d.state::text AS delivery_state, u.input, u.output, u.cost
       FROM cron_runs r CROSS JOIN ${runChain} JOIN admissions a ON a.id = ch.last
         LEFT JOIN delivery_obligations d ON d.admission_id = a.id AND d.call_key = ''
         LEFT JOIN LATERAL (SELECT sum(input_tokens)::int AS input, sum(output_tokens)::int AS output, sum(cost_usd) AS cost
                            FROM model_call_usage WHERE admission_id = ANY(ch.ids)) u ON true
       WHERE r.state = 'dispatched' AND a.state = 'terminal')
     , done AS (
       UPDATE cron_runs r SET state = 'finished', outcome = e.outcome, started_at = e.first_started, finished_at = e.finished_at,
         obligation_id = e.obligation_id, delivery_state = e.delivery_state, input_tokens = e.input, output_tokens = e.output, cost_usd = e.cost
       FROM ended e WHERE r.id = e.id AND r.state = 'dispatched'
       RETURNING r.schedule_id, r.outcome, r.finished_at)
     , latest AS (SELECT DISTINCT ON (schedule_id) schedule_id, outcome FROM done ORDER BY schedule_id, finished_at DESC)
     , success AS (SELECT schedule_id, max(finished_at) AS at FROM done WHERE outcome = 'completed' GROUP BY schedule_id)
     , marked AS (UPDATE cron_schedules s SET last_status = latest.outcome,
                    last_success_at = GREATEST(s.last_success_at, (SELECT at FROM success WHERE success.schedule_id = s.id))
                  FROM latest WHERE s.id = latest.schedule_id RETURNING s.id)
     SELECT schedule_id AS "scheduleId" FROM latest`);
  return rows.map((r) => r.scheduleId);
}

/**
 * Bounded history: per schedule, the newest `successfulRunsHistoryLimit` completed runs and the
 * newest `failedRunsHistoryLimit` others (failed, interrupted, discarded, skipped). Runs still
 * going are never pruned. Returns how many rows went.
 */
export async function pruneRuns(sql: Sql, scheduleIds: string[]): Promise<number> {
  if (scheduleIds.length === 0) return 0;
  const { rowCount } = await sql.query(
    `DELETE FROM cron_runs r USING (
       SELECT x.id, row_number() OVER (PARTITION BY x.schedule_id, x.outcome = 'completed' ORDER BY x.slot DESC, x.created_at DESC) AS n,
              x.outcome = 'completed' AS ok, s.spec
       FROM cron_runs x JOIN cron_schedules s ON s.id = x.schedule_id
       WHERE x.schedule_id = ANY($1::uuid[]) AND x.state <> 'dispatched') ranked
     WHERE r.id = ranked.id AND ranked.n > CASE WHEN ranked.ok THEN COALESCE((ranked.spec->>'successfulRunsHistoryLimit')::int, 3)
                                                ELSE COALESCE((ranked.spec->>'failedRunsHistoryLimit')::int, 1) END`,
    [scheduleIds]);
  return rowCount ?? 0;
}

export interface CronRunView {
  id: string;
  slot: Date;
  trigger: Trigger;
  state: 'dispatched' | 'finished' | 'skipped';
  /** Live: the admission's state while the run goes, its outcome after. */
  outcome: string | null;
  reason: string | null;
  admissionId: string | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  obligationId: string | null;
  deliveryState: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  costUsd: string | null;
}

/** A CronJob's runs, newest slot first, with the live state of those still going and of their delivery (resumes followed, as the sync does). */
export async function cronHistory(sql: Sql, namespace: string, name: string, limit = 50): Promise<CronRunView[] | undefined> {
  const { rows: found } = await sql.query<{ id: string }>(`SELECT id FROM cron_schedules WHERE namespace = $1 AND name = $2`, [namespace, name]);
  if (!found[0]) return undefined;
  const { rows } = await sql.query<CronRunView>(
    `SELECT r.id, r.slot, r.trigger, r.state, COALESCE(r.outcome, a.outcome::text, a.state::text) AS outcome, r.reason, r.admission_id AS "admissionId",
       COALESCE(r.started_at, ch.first_started) AS "startedAt", COALESCE(r.finished_at, a.finished_at) AS "finishedAt",
       COALESCE(r.obligation_id, d.id) AS "obligationId", COALESCE(d.state::text, r.delivery_state) AS "deliveryState",
       r.input_tokens AS "inputTokens", r.output_tokens AS "outputTokens", r.cost_usd::text AS "costUsd"
     FROM cron_runs r LEFT JOIN ${runChain} ON true LEFT JOIN admissions a ON a.id = ch.last
       LEFT JOIN delivery_obligations d ON d.admission_id = ch.last AND d.call_key = ''
     WHERE r.schedule_id = $1 ORDER BY r.slot DESC, r.created_at DESC LIMIT $2`, [found[0].id, limit]);
  return rows;
}

export interface CronStatusView {
  nextRunAt: Date | null;
  lastScheduleTime: Date | null;
  lastSuccessfulTime: Date | null;
  lastStatus: string | null;
  active: { slot: Date; admissionId: string }[];
  runNowToken: string | null;
}

/** What the operator reports in a CronJob's status. */
export async function cronStatus(sql: Sql, namespace: string, name: string): Promise<CronStatusView | undefined> {
  const { rows } = await sql.query<Omit<CronStatusView, 'active'> & { id: string }>(
    `SELECT s.id, s.next_run_at AS "nextRunAt", s.last_run_at AS "lastScheduleTime", s.last_status AS "lastStatus", s.run_now_token AS "runNowToken",
       GREATEST(s.last_success_at, (SELECT max(COALESCE(r.finished_at, a.finished_at)) FROM cron_runs r LEFT JOIN ${runChain} ON true LEFT JOIN admissions a ON a.id = ch.last
        WHERE r.schedule_id = s.id AND COALESCE(r.outcome, a.outcome::text) = 'completed')) AS "lastSuccessfulTime"
     FROM cron_schedules s WHERE s.namespace = $1 AND s.name = $2`, [namespace, name]);
  const s = rows[0];
  if (!s) return undefined;
  const active = (await activeRuns(sql, s.id)).map((r) => ({ slot: r.slot, admissionId: r.admissionId }));
  const { id: _id, ...rest } = s;
  return { ...rest, active };
}

/** What {@link requestRunNow} did: asked for a run, found the token already used (nothing asked), or found no such CronJob. */
export type RunNowResult = 'requested' | 'already-requested' | 'no-cronjob';

/**
 * "Run now" (`hermes cron run`, the hermes.dev/run-now annotation): the scheduler's next tick fires
 * a manual run. `token`: the annotation's value, so one value asks once.
 */
export async function requestRunNow(db: Db, namespace: string, name: string, token?: string): Promise<RunNowResult> {
  const { rowCount } = await db.pool.query(
    `UPDATE cron_schedules SET run_now_at = COALESCE(run_now_at, now()), run_now_token = COALESCE($3, run_now_token), updated_at = now()
     WHERE namespace = $1 AND name = $2 AND ($3::text IS NULL OR run_now_token IS DISTINCT FROM $3)`, [namespace, name, token ?? null]);
  if (rowCount) return 'requested';
  const { rowCount: exists } = await db.pool.query(`SELECT 1 FROM cron_schedules WHERE namespace = $1 AND name = $2`, [namespace, name]);
  return (exists ?? 0) > 0 ? 'already-requested' : 'no-cronjob';
}

/** The CronJobs in Postgres (for `hermes cron list`). */
export async function listCronSchedules(sql: Sql): Promise<{ namespace: string; name: string; schedule: string; timeZone: string; suspend: boolean; nextRunAt: Date | null; lastRunAt: Date | null; lastStatus: string | null }[]> {
  const { rows } = await sql.query<{ namespace: string; name: string; schedule: string; timeZone: string; suspend: boolean; nextRunAt: Date | null; lastRunAt: Date | null; lastStatus: string | null }>(
    `SELECT namespace, name, schedule, time_zone AS "timeZone", suspend, next_run_at AS "nextRunAt", last_run_at AS "lastRunAt", last_status AS "lastStatus"
     FROM cron_schedules ORDER BY namespace, name`);
  return rows;
}

