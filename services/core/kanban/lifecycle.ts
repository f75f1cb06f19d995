// How a task moves once it exists: complete, block (with Hermes' kind), unblock, heartbeat,
// archive — and how a run ends, with the circuit breaker. A dispatched turn (worker scope) may
// change only its own task, and only while its run still holds it (a reclaimed run's late
// kanban_complete is refused, so one task never completes twice).
import type { Sql } from '../db.js';
import { pgJson } from '../ledger/pg-text.js';
import { addEvent, getTask } from './tasks.js';
import { KanbanError, type BlockKind, type KanbanScope, type KanbanTask, type RunOutcome } from './types.js';

/** Hermes: a task blocked again after this many unblocks goes to triage, for a person. */
export const BLOCK_RECURRENCE_LIMIT = 2;

/** Outcomes the circuit breaker counts (when not an infrastructure failure). */
const COUNTED: ReadonlySet<RunOutcome> = new Set(['failed', 'crashed', 'timed_out', 'stale', 'reclaimed', 'protocol_violation']);

export interface BreakerPolicy {
  /** Consecutive counted failures before the task is blocked (a task's max_retries wins). @defaultValue 2 */
  failureLimit: number;
}

const clearClaim = `current_run_id = NULL, claim_lock = NULL, claim_expires_at = NULL`;

/** Blocks `task` — or sends it to triage when it was already unblocked BLOCK_RECURRENCE_LIMIT times. */
async function applyBlock(sql: Sql, task: Pick<KanbanTask, 'id' | 'unblocks'>, b: { kind: BlockKind; reason: string; actor: string }, now: Date): Promise<'blocked' | 'triage'> {
  const status = task.unblocks >= BLOCK_RECURRENCE_LIMIT ? 'triage' : 'blocked';
  await sql.query(`UPDATE kanban_tasks SET status = $2, block_kind = $3, block_reason = $4, ${clearClaim}, updated_at = $5 WHERE id = $1`, [task.id, status, b.kind, b.reason, now]);
  await addEvent(sql, { taskId: task.id, kind: status === 'triage' ? 'escalated_to_triage' : 'blocked', data: { kind: b.kind, reason: b.reason, by: b.actor, unblocks: task.unblocks } }, now);
  return status;
}

export interface RunEnd {
  outcome: RunOutcome;
  infrastructure?: boolean;
  summary?: string | null;
  error?: string | null;
  metadata?: unknown;
}

/** Ends run `runId` once (a second end is a no-op: returns false). Does not touch the task. */
async function closeRun(sql: Sql, runId: string, end: RunEnd, now: Date): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE kanban_runs SET status = 'ended', outcome = $2, infrastructure = $3, summary = $4, error = $5, metadata = $6, ended_at = $7 WHERE id = $1 AND status <> 'ended'`,
    [runId, end.outcome, end.infrastructure ?? false, end.summary ?? null, end.error ?? null, pgJson(end.metadata), now]);
  return rowCount === 1;
}

/**
 * A run ended without the task completing or blocking: the task goes back to ready, or — after
 * `failureLimit` counted failures in a row — is blocked (`gave_up`), or sent to triage. An
 * infrastructure failure is not counted. Returns where the task went (undefined: the run had
 * already ended, or no longer held its task).
 */
export async function failRun(sql: Sql, runId: string, end: RunEnd, now: Date, policy: BreakerPolicy): Promise<KanbanStatus | undefined> {
  if (!(await closeRun(sql, runId, end, now))) return undefined;
  const { rows } = await sql.query<{ id: string; consecutiveFailures: number; maxRetries: number | null; unblocks: number }>(
    `SELECT id, consecutive_failures AS "consecutiveFailures", max_retries AS "maxRetries", unblocks FROM kanban_tasks WHERE id = (SELECT task_id FROM kanban_runs WHERE id = $1) AND current_run_id = $1 FOR UPDATE`, [runId]);
  const task = rows[0];
  if (!task) return undefined;
  const counted = COUNTED.has(end.outcome) && !end.infrastructure;
  const failures = task.consecutiveFailures + (counted ? 1 : 0);
  await addEvent(sql, { taskId: task.id, runId, kind: end.outcome, data: { error: end.error ?? null, infrastructure: end.infrastructure ?? false, failures } }, now);
  if (counted && failures >= (task.maxRetries ?? policy.failureLimit)) {
    await sql.query(`UPDATE kanban_tasks SET consecutive_failures = $2 WHERE id = $1`, [task.id, failures]);
    await addEvent(sql, { taskId: task.id, runId, kind: 'gave_up', data: { failures, last: end.outcome } }, now);
    return applyBlock(sql, task, { kind: 'needs_input', reason: `Gave up after ${failures} consecutive failed runs (last: ${end.outcome}).`, actor: 'dispatcher' }, now);
  }
  await sql.query(`UPDATE kanban_tasks SET status = 'ready', consecutive_failures = $2, ${clearClaim}, updated_at = $3 WHERE id = $1`, [task.id, failures, now]);
  return 'ready';
}

type KanbanStatus = KanbanTask['status'];

/** A worker acts only on its own task, and only while its run holds it. */
function ownRun(scope: KanbanScope, task: KanbanTask): string | undefined {
  if (scope.mode !== 'worker') return task.status === 'running' ? task.currentRunId ?? undefined : undefined;
  if (task.id !== scope.taskId) throw new KanbanError('forbidden', `This run works on task ${scope.taskId}; it may not change ${task.id}. Use kanban_comment to hand information to other tasks, or kanban_create for follow-up work.`);
  if (task.currentRunId !== scope.runId || task.status !== 'running') throw new KanbanError('conflict', `This run no longer holds task ${task.id} (it is ${task.status}); stop working on it.`);
  return scope.runId;
}

export interface Completion { summary?: string; result?: string; metadata?: Record<string, unknown>; createdCards?: string[] }

async function checkCreatedCards(sql: Sql, scope: KanbanScope, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const { rows } = await sql.query<{ id: string }>(`SELECT id FROM kanban_tasks WHERE board_id = $1 AND id = ANY($2) AND created_by = $3`, [scope.boardId, ids, scope.actor]);
  const found = new Set(rows.map((r) => r.id));
  const phantom = ids.filter((id) => !found.has(id));
  if (phantom.length) throw new KanbanError('invalid', `created_cards names tasks this caller did not create on this board: ${phantom.join(', ')}. List only ids kanban_create returned.`);
}

export async function completeTask(sql: Sql, scope: KanbanScope, taskId: string, c: Completion, now: Date): Promise<KanbanTask> {
  if (!c.summary && !c.result) throw new KanbanError('invalid', 'kanban_complete needs a summary (or a result).');
  const task = await getTask(sql, scope, taskId, true);
  if (task.status === 'done' || task.status === 'archived') throw new KanbanError('conflict', `Task ${task.id} is already ${task.status}.`);
  const runId = ownRun(scope, task);
  await checkCreatedCards(sql, scope, c.createdCards ?? []);
  if (runId) await closeRun(sql, runId, { outcome: scope.mode === 'worker' ? 'completed' : 'cancelled', summary: c.summary ?? null, metadata: c.metadata }, now);
  await sql.query(
    `UPDATE kanban_tasks SET status = 'done', result = $2, completed_at = $3, updated_at = $3, consecutive_failures = 0, unblocks = 0, block_kind = NULL, block_reason = NULL, ${clearClaim} WHERE id = $1`,
    [task.id, c.result ?? c.summary ?? null, now]);
  await addEvent(sql, { taskId: task.id, runId: runId ?? null, kind: 'completed', data: { by: scope.actor, summary: c.summary ?? null, metadata: c.metadata ?? null, createdCards: c.createdCards ?? [] } }, now);
  return getTask(sql, scope, task.id);
}

export async function blockTask(sql: Sql, scope: KanbanScope, taskId: string, b: { reason: string; kind?: BlockKind }, now: Date): Promise<'blocked' | 'triage'> {
  if (!b.reason.trim()) throw new KanbanError('invalid', 'Blocking needs a reason: what a person must answer.');
  const task = await getTask(sql, scope, taskId, true);
  if (['blocked', 'done', 'archived'].includes(task.status)) throw new KanbanError('conflict', `Task ${task.id} is ${task.status}; only open tasks can be blocked.`);
  const runId = ownRun(scope, task);
  if (runId) await closeRun(sql, runId, { outcome: scope.mode === 'worker' ? 'blocked' : 'cancelled', summary: b.reason }, now);
  return applyBlock(sql, task, { kind: b.kind ?? 'needs_input', reason: b.reason, actor: scope.actor }, now);
}

/** blocked → ready (todo while a parent is not done); triage → todo (a person looked at it: the recurrence count restarts). */
export async function unblockTask(sql: Sql, scope: KanbanScope, taskId: string, now: Date): Promise<KanbanStatus> {
  if (scope.mode === 'worker') throw new KanbanError('forbidden', 'A dispatched run cannot unblock tasks; kanban_unblock is for the board\'s owner.');
  const task = await getTask(sql, scope, taskId, true);
  if (task.status !== 'blocked' && task.status !== 'triage') throw new KanbanError('conflict', `Task ${task.id} is ${task.status}, not blocked.`);
  const { rows } = await sql.query<{ status: KanbanStatus }>(
    `UPDATE kanban_tasks t SET status = CASE WHEN t.status = 'blocked' AND NOT EXISTS (SELECT 1 FROM kanban_links l JOIN kanban_tasks p ON p.id = l.parent_id WHERE l.child_id = t.id AND p.status <> 'done')
         THEN 'ready'::kanban_status ELSE 'todo'::kanban_status END,
       unblocks = CASE WHEN t.status = 'triage' THEN 0 ELSE t.unblocks + 1 END,
       consecutive_failures = 0, block_kind = NULL, block_reason = NULL, updated_at = $2
     WHERE t.id = $1 RETURNING t.status`, [task.id, now]);
  await addEvent(sql, { taskId: task.id, kind: 'unblocked', data: { by: scope.actor, from: task.status } }, now);
  return rows[0]!.status;
}

/** A dispatched run says it is alive: the run's heartbeat and the task's claim move forward. */
export async function heartbeatTask(sql: Sql, scope: KanbanScope, taskId: string, h: { note?: string | undefined; claimTtlSeconds: number }, now: Date): Promise<void> {
  if (scope.mode !== 'worker') throw new KanbanError('forbidden', 'Only a dispatched run heartbeats its task.');
  const task = await getTask(sql, scope, taskId, true);
  const runId = ownRun(scope, task)!;
  await sql.query(`UPDATE kanban_runs SET heartbeat_at = $2 WHERE id = $1`, [runId, now]);
  await sql.query(`UPDATE kanban_tasks SET claim_expires_at = $2::timestamptz + make_interval(secs => $3) WHERE id = $1`, [task.id, now, h.claimTtlSeconds]);
  await addEvent(sql, { taskId: task.id, runId, kind: 'heartbeat', data: h.note ? { note: h.note } : null }, now);
}

export async function archiveTask(sql: Sql, scope: KanbanScope, taskId: string, now: Date): Promise<void> {
  if (scope.mode === 'worker') throw new KanbanError('forbidden', 'A dispatched run cannot archive tasks.');
  const task = await getTask(sql, scope, taskId, true);
  if (task.status === 'running') throw new KanbanError('conflict', `Task ${task.id} is running; block or complete it first.`);
  await sql.query(`UPDATE kanban_tasks SET status = 'archived', updated_at = $2 WHERE id = $1`, [task.id, now]);
  await addEvent(sql, { taskId: task.id, kind: 'archived', data: { by: scope.actor } }, now);
}

/** Any kanban_* call of a dispatched run counts as a heartbeat of that run (Hermes bridges activity the same way). */
export async function touchRun(sql: Sql, runId: string, now: Date): Promise<void> {
  await sql.query(`UPDATE kanban_runs SET heartbeat_at = GREATEST(heartbeat_at, $2) WHERE id = $1 AND status <> 'ended'`, [runId, now]);
}
