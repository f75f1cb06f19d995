// Tasks, links, comments and attachments on one board. Every statement names the scope's board,
// so a task id from another board is "not found" — never read, never changed.
import { randomBytes } from 'node:crypto';
import type { Sql } from '../db.js';
import { pgJson } from '../ledger/pg-text.js';
import { KanbanError, type BlockKind, type KanbanAttachment, type KanbanComment, type KanbanEvent, type KanbanRun, type KanbanScope, type KanbanStatus, type KanbanTask } from './types.js';

export const taskColumns = `t.id, t.board_id AS "boardId", t.title, t.body, t.assignee_agent_id AS "assigneeAgentId",
  (SELECT a.namespace || '/' || a.name FROM agents a WHERE a.id = t.assignee_agent_id) AS assignee,
  t.status, t.block_kind AS "blockKind", t.block_reason AS "blockReason", t.priority, t.created_by AS "createdBy",
  t.max_runtime_seconds AS "maxRuntimeSeconds", t.max_retries AS "maxRetries", t.consecutive_failures AS "consecutiveFailures",
  t.unblocks, t.scheduled_at AS "scheduledAt", t.current_run_id AS "currentRunId", t.result,
  t.created_at AS "createdAt", t.updated_at AS "updatedAt", t.completed_at AS "completedAt"`;

export const newTaskId = () => `t_${randomBytes(6).toString('hex')}`;

export async function addEvent(sql: Sql, e: { taskId: string; kind: string; data?: unknown; runId?: string | null }, now: Date): Promise<void> {
  await sql.query(`INSERT INTO kanban_events (task_id, run_id, kind, data, created_at) VALUES ($1, $2, $3, $4, $5)`, [e.taskId, e.runId ?? null, e.kind, pgJson(e.data), now]);
}

/** The task on the scope's board, locked for update when `lock`; not found otherwise. */
export async function getTask(sql: Sql, scope: KanbanScope, id: string, lock = false): Promise<KanbanTask> {
  const { rows } = await sql.query<KanbanTask>(`SELECT ${taskColumns} FROM kanban_tasks t WHERE t.id = $1 AND t.board_id = $2${lock ? ' FOR UPDATE' : ''}`, [id, scope.boardId]);
  if (!rows[0]) throw new KanbanError('not_found', `No task ${id} on this board (kanban_list shows its tasks).`);
  return rows[0];
}

/**
 * The assignee's agent id. `name` or `namespace/name`, always in the board's namespace; on a
 * person's board only the board's own agent (a chat user never sets another agent to work).
 */
export async function resolveAssignee(sql: Sql, scope: KanbanScope, assignee: string): Promise<string> {
  const { rows } = await sql.query<{ id: string; personal: boolean; own: boolean }>(
    `SELECT a.id, b.owner_user_id IS NOT NULL AS personal, a.id = b.agent_id AS own
     FROM kanban_boards b JOIN agents ba ON ba.id = b.agent_id JOIN agents a ON a.namespace = ba.namespace
     WHERE b.id = $1 AND (a.namespace || '/' || a.name = $2 OR a.name = $2)`,
    [scope.boardId, assignee.trim()],
  );
  const a = rows[0];
  if (!a) throw new KanbanError('not_found', `No agent "${assignee}" in this board's namespace.`);
  if (a.personal && !a.own && scope.mode !== 'admin') throw new KanbanError('forbidden', `Tasks on a person's board can only be assigned to the board's own agent, not "${assignee}".`);
  return a.id;
}

export interface CreateTask {
  title: string;
  body?: string;
  assignee?: string;
  parents?: string[];
  priority?: number;
  triage?: boolean;
  idempotencyKey?: string;
  maxRuntimeSeconds?: number;
  maxRetries?: number;
  scheduledAt?: Date;
  initialStatus?: 'blocked';
}

function initialStatus(input: CreateTask, now: Date): KanbanStatus {
  if (input.triage) return 'triage';
  if (input.initialStatus === 'blocked') return 'blocked';
  if (input.scheduledAt && input.scheduledAt > now) return 'scheduled';
  return 'todo';
}

async function insertTask(sql: Sql, scope: KanbanScope, t: Omit<CreateTask, 'assignee'> & { id: string; status: KanbanStatus; assignee: string | null }, now: Date): Promise<void> {
  await sql.query(
    `INSERT INTO kanban_tasks (id, board_id, title, body, assignee_agent_id, status, block_kind, priority, idempotency_key, created_by, max_runtime_seconds, max_retries, scheduled_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)`,
    [t.id, scope.boardId, t.title, t.body ?? null, t.assignee, t.status, t.status === 'blocked' ? 'needs_input' : null, t.priority ?? 0, t.idempotencyKey ?? null,
      scope.actor, t.maxRuntimeSeconds ?? null, t.maxRetries ?? null, t.scheduledAt ?? null, now],
  );
}

/** Postgres `integer`: the columns priority, max_runtime_seconds and max_retries. */
const INT4_MAX = 2_147_483_647;

/** Refuses a number its column cannot hold (a Postgres "out of range" otherwise: a 500 on the admin API). */
function checkNumbers(input: CreateTask): void {
  const bounded = (name: string, v: number | undefined, min: number) => {
    if (v !== undefined && (!Number.isInteger(v) || v < min || v > INT4_MAX)) throw new KanbanError('invalid', `${name} must be a whole number from ${min} to ${INT4_MAX} (got ${v}).`);
  };
  bounded('priority', input.priority, -INT4_MAX - 1);
  bounded('max_runtime_seconds', input.maxRuntimeSeconds, 1);
  bounded('max_retries', input.maxRetries, 1);
}

/**
 * The longest title, body and idempotency key of a task, in characters — every surface (admin API,
 * kanban tools, CLI) bounds them so; an idempotency key past a btree index row's size would fail
 * the insert in Postgres otherwise.
 */
export const KANBAN_TEXT_LIMITS = { title: 500, body: 100_000, idempotencyKey: 200 } as const;

function checkLengths(input: CreateTask): void {
  const bounded = (name: string, v: string | undefined, max: number) => {
    if (v !== undefined && v.length > max) throw new KanbanError('invalid', `${name} takes at most ${max} characters (got ${v.length}).`);
  };
  bounded('title', input.title, KANBAN_TEXT_LIMITS.title);
  bounded('body', input.body, KANBAN_TEXT_LIMITS.body);
  bounded('idempotency key', input.idempotencyKey, KANBAN_TEXT_LIMITS.idempotencyKey);
}

/** Creates a task (todo until its parents are done; the dispatcher promotes it). A known idempotency key returns the existing task. */
export async function createTask(sql: Sql, scope: KanbanScope, input: CreateTask, now: Date): Promise<{ task: KanbanTask; created: boolean }> {
  const title = input.title.trim();
  if (!title) throw new KanbanError('invalid', 'A task needs a title.');
  checkLengths(input);
  checkNumbers(input);
  await sql.query(`SELECT 1 FROM kanban_boards WHERE id = $1 FOR UPDATE`, [scope.boardId]); // serialises idempotency checks per board
  if (input.idempotencyKey) {
    const { rows } = await sql.query<{ id: string }>(`SELECT id FROM kanban_tasks WHERE board_id = $1 AND idempotency_key = $2 AND status <> 'archived'`, [scope.boardId, input.idempotencyKey]);
    if (rows[0]) return { task: await getTask(sql, scope, rows[0].id), created: false };
  }
  const assignee = input.assignee ? await resolveAssignee(sql, scope, input.assignee) : null;
  for (const p of input.parents ?? []) await getTask(sql, scope, p);
  const id = newTaskId();
  const status = initialStatus(input, now);
  await insertTask(sql, scope, { ...input, title, id, status, assignee }, now);
  for (const p of input.parents ?? []) await sql.query(`INSERT INTO kanban_links (parent_id, child_id) VALUES ($1, $2)`, [p, id]);
  await addEvent(sql, { taskId: id, kind: 'created', data: { by: scope.actor, status } }, now);
  return { task: await getTask(sql, scope, id), created: true };
}

/**
 * parent → child on the same board; a self-link or a cycle is refused. Links of a board are made
 * one at a time (the board row's lock, as createTask takes): two opposite links made at once would
 * otherwise both pass the cycle check, then deadlock on each other's task rows.
 */
export async function linkTasks(sql: Sql, scope: KanbanScope, parentId: string, childId: string, now: Date): Promise<void> {
  if (parentId === childId) throw new KanbanError('invalid', 'A task cannot depend on itself.');
  await sql.query(`SELECT 1 FROM kanban_boards WHERE id = $1 FOR UPDATE`, [scope.boardId]);
  await getTask(sql, scope, parentId);
  const child = await getTask(sql, scope, childId, true);
  const { rows } = await sql.query<{ cycle: boolean }>(
    `WITH RECURSIVE up(id) AS (SELECT $1::text UNION SELECT l.parent_id FROM kanban_links l JOIN up ON l.child_id = up.id)
     SELECT EXISTS (SELECT 1 FROM up WHERE id = $2) AS cycle`, [parentId, childId]);
  if (rows[0]?.cycle) throw new KanbanError('invalid', `Linking ${parentId} → ${childId} would make a cycle.`);
  await sql.query(`INSERT INTO kanban_links (parent_id, child_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [parentId, childId]);
  // A ready child waits again for its new parent (the dispatcher promotes it when the parent is done).
  if (child.status === 'ready') await sql.query(`UPDATE kanban_tasks SET status = 'todo', updated_at = $2 WHERE id = $1 AND EXISTS (SELECT 1 FROM kanban_tasks p WHERE p.id = $3 AND p.status <> 'done')`, [childId, now, parentId]);
  await addEvent(sql, { taskId: childId, kind: 'linked', data: { parent: parentId, by: scope.actor } }, now);
}

export async function addComment(sql: Sql, scope: KanbanScope, taskId: string, body: string, now: Date): Promise<KanbanComment> {
  if (!body.trim()) throw new KanbanError('invalid', 'A comment needs a body.');
  await getTask(sql, scope, taskId);
  const { rows } = await sql.query<KanbanComment>(
    `INSERT INTO kanban_comments (task_id, author, body, created_at) VALUES ($1, $2, $3, $4) RETURNING id::text, author, body, created_at AS "createdAt"`,
    [taskId, scope.actor, body, now]);
  return rows[0]!;
}

/** An attachment by reference: an http(s) URL or a storage reference (`s3://…`, `gs://…`, `workspace:…`); never the bytes. */
export async function addAttachment(sql: Sql, scope: KanbanScope, taskId: string, a: { name: string; ref: string }, now: Date): Promise<KanbanAttachment> {
  if (!/^(https?:\/\/|s3:\/\/|gs:\/\/|workspace:)\S+$/.test(a.ref)) throw new KanbanError('invalid', `Attachment "${a.ref}" is not a reference: give an http(s) URL or an s3://, gs:// or workspace: reference.`);
  await getTask(sql, scope, taskId);
  const { rows } = await sql.query<KanbanAttachment>(
    `INSERT INTO kanban_attachments (task_id, name, ref, created_by, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id::text, name, ref, created_by AS "createdBy", created_at AS "createdAt"`,
    [taskId, a.name, a.ref, scope.actor, now]);
  return rows[0]!;
}

export interface TaskDetail {
  task: KanbanTask;
  parents: { id: string; title: string; status: KanbanStatus; result: string | null }[];
  children: string[];
  comments: KanbanComment[];
  attachments: KanbanAttachment[];
  runs: KanbanRun[];
  events: KanbanEvent[];
}

export async function showTask(sql: Sql, scope: KanbanScope, id: string): Promise<TaskDetail> {
  const task = await getTask(sql, scope, id);
  const q = async <T>(text: string) => (await sql.query<T & object>(text, [id])).rows as T[];
  return {
    task,
    parents: await q(`SELECT p.id, p.title, p.status, p.result FROM kanban_links l JOIN kanban_tasks p ON p.id = l.parent_id WHERE l.child_id = $1 ORDER BY p.created_at`),
    children: (await q<{ id: string }>(`SELECT child_id AS id FROM kanban_links WHERE parent_id = $1 ORDER BY child_id`)).map((r) => r.id),
    comments: await q(`SELECT id::text, author, body, created_at AS "createdAt" FROM kanban_comments WHERE task_id = $1 ORDER BY id`),
    attachments: await q(`SELECT id::text, name, ref, created_by AS "createdBy", created_at AS "createdAt" FROM kanban_attachments WHERE task_id = $1 ORDER BY id`),
    runs: await q(`SELECT id, task_id AS "taskId", agent_id AS "agentId", admission_id AS "admissionId", status, outcome, infrastructure, summary, error, metadata,
      claimed_at AS "claimedAt", started_at AS "startedAt", heartbeat_at AS "heartbeatAt", ended_at AS "endedAt" FROM kanban_runs WHERE task_id = $1 ORDER BY claimed_at`),
    events: await q(`SELECT id::text, run_id AS "runId", kind, data, created_at AS "createdAt" FROM (SELECT * FROM kanban_events WHERE task_id = $1 ORDER BY id DESC LIMIT 50) e ORDER BY id`),
  };
}

export interface ListFilter { status?: KanbanStatus; assignee?: string; includeArchived?: boolean; limit?: number }

export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 200;

export async function listTasks(sql: Sql, scope: KanbanScope, f: ListFilter = {}): Promise<{ tasks: KanbanTask[]; truncated: boolean }> {
  const limit = Math.min(Math.max(1, f.limit ?? LIST_DEFAULT_LIMIT), LIST_MAX_LIMIT);
  const { rows } = await sql.query<KanbanTask>(
    `SELECT ${taskColumns} FROM kanban_tasks t LEFT JOIN agents a ON a.id = t.assignee_agent_id
     WHERE t.board_id = $1 AND ($2::kanban_status IS NULL OR t.status = $2) AND ($3::boolean OR t.status <> 'archived' OR $2 = 'archived')
       AND ($4::text IS NULL OR a.name = $4 OR a.namespace || '/' || a.name = $4)
     ORDER BY t.priority DESC, t.created_at LIMIT $5`,
    [scope.boardId, f.status ?? null, f.includeArchived ?? false, f.assignee ?? null, limit + 1],
  );
  return { tasks: rows.slice(0, limit), truncated: rows.length > limit };
}

export type { BlockKind };
