// Delegation (docs/delegation.md): a child of `delegate_task` is an admission of its own in a
// session of its own (platform `subagent`), queued like any turn and run by any worker — not a
// thread of the parent's turn. The `subagents` row links it to the parent session and the turn
// that spawned it, and carries its status (queued → running → completed | failed | stopped),
// result, error and heartbeat. When the last child of a batch ends, the batch's results are
// admitted into the parent session as one new turn, in the same transaction.
import { randomUUID } from 'node:crypto';
import type { Db, Sql } from '../db.js';
import { pgText } from './pg-text.js';
import type { SessionSignal, SignalKind } from './signals.js';

/** The platform of child turns: nothing is ever delivered to a chat (their replies are pulled by the parent). */
export const SUBAGENT_PLATFORM = 'subagent';
/** SPEC: at most 10 children of one session run at once. */
export const MAX_CONCURRENT_CHILDREN = 10;
/** Hermes' `delegation.max_iterations`: each child's own (fresh) budget of model calls. */
export const DEFAULT_CHILD_ITERATIONS = 50;
/** SPEC: a running child beats every 30 s while it makes progress… */
export const SUBAGENT_HEARTBEAT_SECONDS = 30;
/** …and is stale (failed) after 15 cycles without one. */
export const SUBAGENT_STALE_CYCLES = 15;
/** Hermes' `delegation.max_summary_chars`: what of one child's answer the parent gets back. */
export const MAX_CHILD_RESULT_CHARS = 24_000;

export type SubagentStatus = 'queued' | 'running' | 'completed' | 'failed' | 'stopped';

export interface DelegatedTask {
  goal: string;
  context?: string | undefined;
  outputSchema?: unknown;
}

export interface Subagent {
  id: string;
  agentId: string;
  parentSessionId: string;
  parentAdmissionId: string;
  childSessionId: string;
  childAdmissionId: string;
  goal: string;
  status: SubagentStatus;
  result: string | null;
  error: string | null;
  heartbeatAt: Date | null;
  stopRequestedAt: Date | null;
  createdAt: Date;
  finishedAt: Date | null;
}

const columns = `id, agent_id AS "agentId", parent_session_id AS "parentSessionId", parent_admission_id AS "parentAdmissionId",
  child_session_id AS "childSessionId", child_admission_id AS "childAdmissionId", goal, status, result, error,
  heartbeat_at AS "heartbeatAt", stop_requested_at AS "stopRequestedAt", created_at AS "createdAt", finished_at AS "finishedAt"`;

const ACTIVE = `('queued', 'running')`;

/** The child's first (and only) user message: its goal, the context it was given, the shape of its answer. */
export function childRequest(task: DelegatedTask): string {
  const parts = [`You are a subagent working on one delegated task. Work on it with your tools, then answer with your final result: it goes back to the agent that delegated the task (not to a person), so make it complete and self-contained.`, `# Goal\n${task.goal}`];
  if (task.context?.trim()) parts.push(`# Context\n${task.context}`);
  if (task.outputSchema !== undefined) parts.push(`# Output\nAnswer with JSON only, matching this JSON Schema:\n${JSON.stringify(task.outputSchema, null, 2)}`);
  return parts.join('\n\n');
}

export type SpawnResult =
  | { ok: true; spawned: Subagent[] }
  | { ok: false; reason: string };

/**
 * How many batches in a row may each be spawned by the turn that reported the batch before it.
 * Every batch's results start a new parent turn with a fresh budget, so without a bound an agent
 * could delegate round after round with nobody asking (in Hermes the parent turn's budget bounds
 * its children); a person's message starts the count again.
 */
export const MAX_ROUNDS_WITHOUT_PERSON = 3;

/** How many batch-results turns lead up to `admissionId` (0: a person's, or any other, turn). */
async function roundsWithoutPerson(sql: Sql, admissionId: string): Promise<number> {
  const { rows: [row] } = await sql.query<{ rounds: number | null }>(
    `WITH RECURSIVE chain (admission, rounds) AS (
       SELECT $1::uuid, 0
       UNION
       SELECT s.parent_admission_id, c.rounds + 1 FROM chain c JOIN subagents s ON s.reported_admission_id = c.admission
       WHERE c.rounds <= $2
     ) SELECT max(rounds) AS rounds FROM chain`, [admissionId, MAX_ROUNDS_WITHOUT_PERSON]);
  return row?.rounds ?? 0;
}

interface ParentTurn { agent_id: string; session_id: string; user_id: string | null; platform: string; trace_context: unknown }

/**
 * Spawns `tasks` as children of the turn `parentAdmissionId`, in one transaction: refused as a
 * whole when it would pass `limit` active children of the parent session (the session row is
 * locked, so concurrent spawns count each other), or when the parent is itself a child (depth 1).
 */
export async function spawnSubagents(db: Db, parentAdmissionId: string, tasks: readonly DelegatedTask[], limit: number): Promise<SpawnResult> {
  return db.tx(async (sql) => {
    const { rows: [parent] } = await sql.query<ParentTurn>(
      `SELECT agent_id, session_id, user_id, platform, trace_context FROM admissions WHERE id = $1`, [parentAdmissionId]);
    if (!parent) return { ok: false, reason: `the delegating turn ${parentAdmissionId} does not exist` };
    if (parent.platform === SUBAGENT_PLATFORM) return { ok: false, reason: 'a subagent cannot delegate (the delegation depth is 1)' };
    const rounds = await roundsWithoutPerson(sql, parentAdmissionId);
    if (rounds >= MAX_ROUNDS_WITHOUT_PERSON) {
      return { ok: false, reason: `this conversation has delegated ${rounds} rounds in a row, each started by the results of the one before, without a message from the user; at most ${MAX_ROUNDS_WITHOUT_PERSON} are allowed. Answer the user with what the subagents found; they can ask for more.` };
    }
    await sql.query(`SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, [parent.session_id]);
    const { rows: [count] } = await sql.query<{ n: string }>(
      `SELECT count(*) AS n FROM subagents WHERE parent_session_id = $1 AND status IN ${ACTIVE}`, [parent.session_id]);
    const active = Number(count?.n ?? 0);
    if (active + tasks.length > limit) {
      return { ok: false, reason: `at most ${limit} subagents may run at once in this conversation: ${active} are running and ${tasks.length} were asked for. Wait for results, or stop some (action "stop"), then spawn again.` };
    }
    const spawned: Subagent[] = [];
    for (const task of tasks) spawned.push(await spawnOne(sql, parentAdmissionId, parent, task));
    return { ok: true, spawned };
  });
}

async function spawnOne(sql: Sql, parentAdmissionId: string, parent: ParentTurn, task: DelegatedTask): Promise<Subagent> {
  const id = randomUUID();
  const childSession = randomUUID();
  const childAdmission = randomUUID();
  await sql.query(
    `INSERT INTO sessions (id, agent_id, user_id, session_key, updated_at) VALUES ($1, $2, $3, $4, now())`,
    [childSession, parent.agent_id, parent.user_id, `${SUBAGENT_PLATFORM}:${id}`]);
  await sql.query(
    `INSERT INTO admissions (id, agent_id, session_id, user_id, platform, intent, content, trace_context)
     VALUES ($1, $2, $3, $4, $5, 'queue', $6, $7)`,
    [childAdmission, parent.agent_id, childSession, parent.user_id, SUBAGENT_PLATFORM, pgText(childRequest(task)), parent.trace_context ?? null]);
  const { rows: [row] } = await sql.query<Subagent>(
    `INSERT INTO subagents (id, agent_id, parent_session_id, parent_admission_id, child_session_id, child_admission_id, goal)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${columns}`,
    [id, parent.agent_id, parent.session_id, parentAdmissionId, childSession, childAdmission, pgText(task.goal)]);
  return row!;
}

/** The children of a session, newest first. */
export async function listSubagents(sql: Sql, parentSessionId: string, limit = 50): Promise<Subagent[]> {
  const { rows } = await sql.query<Subagent>(`SELECT ${columns} FROM subagents WHERE parent_session_id = $1 ORDER BY created_at DESC, id LIMIT $2`, [parentSessionId, limit]);
  return rows;
}

/** Subagent ids are UUIDs; anything else (a model's typo) names no subagent rather than failing the query. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function getSubagent(sql: Sql, id: string): Promise<Subagent | undefined> {
  if (!UUID.test(id)) return undefined;
  const { rows } = await sql.query<Subagent>(`SELECT ${columns} FROM subagents WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * The child row of a child turn, by the child's session: its first admission, or the `resume` that
 * continues it after a worker shutdown cut it (turns.ts cutTurn).
 */
export async function subagentOfChild(sql: Sql, childSessionId: string): Promise<Subagent | undefined> {
  const { rows } = await sql.query<Subagent>(`SELECT ${columns} FROM subagents WHERE child_session_id = $1`, [childSessionId]);
  return rows[0];
}

/** The child turn starts (or resumes): `running`, a heartbeat. False when it was stopped (or ended) before. */
export async function markSubagentRunning(sql: Sql, childSessionId: string): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE subagents SET status = 'running', heartbeat_at = now() WHERE child_session_id = $1 AND status IN ${ACTIVE}`, [childSessionId]);
  return (rowCount ?? 0) > 0;
}

/** A heartbeat cycle in which the child made progress. */
export async function beatSubagent(sql: Sql, id: string): Promise<void> {
  await sql.query(`UPDATE subagents SET heartbeat_at = now() WHERE id = $1 AND status = 'running'`, [id]);
}

/**
 * A control signal (stop, steer) for a child's turn, recorded in the child's session as after its
 * latest admission (so the running turn honours it, and a turn that has yet to start finds it).
 */
async function childSignal(sql: Sql, sub: Pick<Subagent, 'childSessionId'>, kind: SignalKind, text: string): Promise<SessionSignal> {
  const { rows: [r] } = await sql.query<{ id: string; seq: string }>(
    `INSERT INTO session_signals (id, session_id, admission_id, admission_seq, kind, text)
     SELECT gen_random_uuid(), $1, NULL, max(a.seq) + 1, $2, $3 FROM admissions a WHERE a.session_id = $1
     RETURNING id, admission_seq AS seq`,
    [sub.childSessionId, kind, text]);
  return { id: r!.id, sessionId: sub.childSessionId, admissionSeq: Number(r!.seq), kind, text };
}

export type SteerResult = { ok: true; signal: SessionSignal } | { ok: false; reason: string };

/** Sends `message` to a running (or queued) child of `parentSessionId` as a steer. */
export async function steerSubagent(sql: Sql, parentSessionId: string, id: string, message: string): Promise<SteerResult> {
  const sub = await getSubagent(sql, id);
  if (!sub || sub.parentSessionId !== parentSessionId) return { ok: false, reason: `no subagent ${id} in this conversation (action "list" shows them)` };
  if (sub.status !== 'queued' && sub.status !== 'running') return { ok: false, reason: `subagent ${id} has already ended (${sub.status})` };
  return { ok: true, signal: await childSignal(sql, sub, 'steer', message) };
}

export interface StoppedChildren {
  /** Children asked to stop (queued ones are stopped at once, running ones by their signal). */
  ids: string[];
  /** Stop signals of running children, to announce on their sessions' control channels. */
  signals: SessionSignal[];
}

/** The stop text a child's turn ends with ("stopped by …"). */
export const CHILD_STOP_TEXT = 'its parent';

/**
 * Stops the active children of `parentSessionId` (only `id` when given): a queued child is
 * `stopped` at once (its turn ends as soon as it starts); a running one gets a stop signal and is
 * `stopped` when its turn ends.
 */
export async function stopSubagents(sql: Sql, parentSessionId: string, id?: string): Promise<StoppedChildren> {
  if (id !== undefined && !UUID.test(id)) return { ids: [], signals: [] };
  const { rows } = await sql.query<Subagent>(
    `UPDATE subagents SET stop_requested_at = coalesce(stop_requested_at, now()),
       status = CASE WHEN status = 'queued' THEN 'stopped' ELSE status END,
       error = CASE WHEN status = 'queued' THEN 'stopped before it started' ELSE error END,
       finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END
     WHERE parent_session_id = $1 AND status IN ${ACTIVE} AND ($2::uuid IS NULL OR id = $2::uuid)
     RETURNING ${columns}`,
    [parentSessionId, id ?? null]);
  const signals: SessionSignal[] = [];
  for (const sub of rows) if (sub.status === 'running') signals.push(await childSignal(sql, sub, 'stop', CHILD_STOP_TEXT));
  return { ids: rows.map((r) => r.id), signals };
}

interface ChildEnd { state: string; outcome: string | null; error: string | null; reply: string | null }

/** How a child's admission ended, as the child's status, result and error. */
function childEnd(end: ChildEnd, stopRequested: boolean): { status: SubagentStatus; result: string | null; error: string | null } {
  if (end.state === 'terminal' && end.outcome === 'completed') return { status: 'completed', result: end.reply ?? '', error: null };
  if (end.outcome === 'interrupted' && stopRequested) return { status: 'stopped', result: null, error: 'stopped' };
  const why = end.error ?? end.reply ?? `the child turn ended ${end.outcome ?? end.state}`;
  return { status: 'failed', result: null, error: end.outcome === 'interrupted' ? `interrupted: ${why}` : why };
}

/** A batch's results to admit into the parent session: the new admission to enqueue. */
export interface ReportedBatch {
  admissionId: string;
  sessionId: string;
}

/**
 * Records the end of the child in session `childSessionId` on its row — by the session's latest
 * admission (a resume continues a cut turn), once that is terminal or unknown — unless the row
 * already ended (stale, stopped while queued); then reports its batch when complete.
 */
export async function settleSubagent(db: Db, childSessionId: string): Promise<ReportedBatch | undefined> {
  return db.tx(async (sql) => {
    const { rows: [sub] } = await sql.query<Subagent>(`SELECT ${columns} FROM subagents WHERE child_session_id = $1 FOR UPDATE`, [childSessionId]);
    if (!sub) return undefined;
    if (sub.status === 'queued' || sub.status === 'running') {
      const { rows: [end] } = await sql.query<ChildEnd>(
        `SELECT a.state, a.outcome, a.error, d.content AS reply FROM admissions a LEFT JOIN delivery_obligations d ON d.admission_id = a.id AND d.call_key = ''
         WHERE a.session_id = $1 ORDER BY a.seq DESC LIMIT 1`, [childSessionId]);
      if (!end || (end.state !== 'terminal' && end.state !== 'unknown')) return undefined;
      const done = childEnd(end, sub.stopRequestedAt !== null);
      await sql.query(`UPDATE subagents SET status = $2::subagent_status, result = $3, error = $4, finished_at = now() WHERE id = $1`,
        [sub.id, done.status, done.result === null ? null : pgText(done.result), done.error === null ? null : pgText(done.error)]);
    }
    return reportBatch(sql, sub.parentAdmissionId);
  });
}

const capped = (s: string) => (s.length > MAX_CHILD_RESULT_CHARS ? `${s.slice(0, MAX_CHILD_RESULT_CHARS)}\n[… cut at ${MAX_CHILD_RESULT_CHARS} characters]` : s);

/** The parent's new message: every child of the batch, its status and its result or error. */
export function batchResultsText(children: readonly Pick<Subagent, 'id' | 'goal' | 'status' | 'result' | 'error'>[]): string {
  const parts = children.map((c) => {
    const body = c.status === 'completed' ? `Result:\n${capped(c.result ?? '')}` : `Error: ${c.error ?? c.status}`;
    return `## Subagent ${c.id}: ${c.status}\nGoal: ${c.goal}\n${body}`;
  });
  return [`[Delegated task results: ${children.length} subagent(s) finished. The person you are helping has not seen these; use them to continue the work and answer.]`, ...parts].join('\n\n');
}

/**
 * When every child spawned by `parentAdmissionId` has ended and the batch is not reported yet
 * (and not all of it was stopped): one new queued admission in the parent session carrying the
 * results, going where the parent turn's reply went — none into a session `/new` ended (the person
 * left that conversation). All under row locks, so it happens once.
 */
async function reportBatch(sql: Sql, parentAdmissionId: string): Promise<ReportedBatch | undefined> {
  const { rows } = await sql.query<Subagent & { reportedAdmissionId: string | null }>(
    `SELECT ${columns}, reported_admission_id AS "reportedAdmissionId" FROM subagents WHERE parent_admission_id = $1 ORDER BY created_at, id FOR UPDATE`, [parentAdmissionId]);
  if (!rows.length || rows.some((r) => r.status === 'queued' || r.status === 'running' || r.reportedAdmissionId)) return undefined;
  if (rows.every((r) => r.status === 'stopped')) return undefined; // stopped by the person or the parent: nothing to continue
  const { rows: [adm] } = await sql.query<{ id: string; session_id: string }>(
    `INSERT INTO admissions (id, agent_id, session_id, user_id, platform, intent, content, reply_target, trace_context)
     SELECT gen_random_uuid(), a.agent_id, a.session_id, a.user_id, a.platform, 'queue', $2, a.reply_target, a.trace_context
     FROM admissions a JOIN sessions s ON s.id = a.session_id WHERE a.id = $1 AND s.state <> 'ended'
     RETURNING id, session_id`,
    [parentAdmissionId, pgText(batchResultsText(rows))]);
  if (!adm) return undefined;
  await sql.query(`UPDATE subagents SET reported_admission_id = $2 WHERE parent_admission_id = $1`, [parentAdmissionId, adm.id]);
  return { admissionId: adm.id, sessionId: adm.session_id };
}

/** What a sweep of the children did: results admitted into parent sessions (to enqueue), stale children failed. */
export interface SubagentSweep {
  reported: ReportedBatch[];
  stale: string[];
}

/**
 * The sweeper's part: children whose turn ended without their row being settled (the worker died
 * between the two, or the turn became unknown) are settled now; running children without a
 * progress heartbeat for `staleSeconds` are failed as stale (a late end of their turn changes nothing).
 */
export async function sweepSubagents(db: Db, staleSeconds: number): Promise<SubagentSweep> {
  const out: SubagentSweep = { reported: [], stale: [] };
  const { rows: ended } = await db.pool.query<{ child: string }>(
    `SELECT s.child_session_id AS child FROM subagents s
       CROSS JOIN LATERAL (SELECT state FROM admissions WHERE session_id = s.child_session_id ORDER BY seq DESC LIMIT 1) a
     WHERE s.status IN ${ACTIVE} AND a.state IN ('terminal', 'unknown') LIMIT 500`);
  for (const { child } of ended) {
    const r = await settleSubagent(db, child);
    if (r) out.reported.push(r);
  }
  const { rows: stale } = await db.pool.query<{ child: string; id: string }>(
    `UPDATE subagents SET status = 'failed', finished_at = now(),
       error = 'stale: no progress heartbeat for ' || $2 || ' seconds (' || $3 || ' heartbeat cycles); the child was given up'
     WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => $1)
     RETURNING id, child_session_id AS child`,
    [staleSeconds, String(staleSeconds), String(SUBAGENT_STALE_CYCLES)]);
  for (const { id, child } of stale) {
    out.stale.push(id);
    const r = await settleSubagent(db, child);
    if (r) out.reported.push(r);
  }
  return out;
}
