// The kanban_* tools (Hermes' names and arguments): show, list, create, link, comment, complete,
// block, unblock, heartbeat. Offered to dispatched turns (their own task; list and unblock are
// the board owner's, hidden from them) and to turns whose Profile lists the `kanban` toolset
// (the person's own board). `board` is accepted, but a turn reaches only its own board. Hermes
// arguments we cannot honour (workspaces, goal mode, per-task skills) are refused when set.
import { z } from 'zod';
import {
  BLOCK_KINDS, KANBAN_STATUSES, KANBAN_TEXT_LIMITS, KanbanError, LIST_MAX_LIMIT, addAttachment, addComment, blockTask, completeTask, createTask, heartbeatTask, linkTasks, listTasks, showTask, unblockTask,
  type KanbanScope, type KanbanTask, type Sql,
} from '../../core/index.js';
import { defineTool, type ToolContext } from './registry.js';
import { toolError } from './sandbox-result.js';

export const NO_KANBAN = 'Kanban tools are not available here (no board is configured for this turn).';
/** Only the board's owner routes work: dispatched runs never see these. */
export const ORCHESTRATOR_ONLY: readonly string[] = ['kanban_list', 'kanban_unblock'];

// Lengths as the admin API bounds them (routes/admin-kanban.ts): an idempotency key past a btree
// index row's limit would fail the insert in Postgres instead.
const board = z.string().max(200).optional().describe('Board to target. A turn reaches only its own board (a dispatched task\'s board, or your own); omit it.');
const taskIdDefault = z.string().max(64).optional().describe('Task id. Omitted: the task this run was dispatched for.');

const ok = (fields: Record<string, unknown>) => JSON.stringify({ ok: true, ...fields });

/** Runs `fn` on the caller's board: a refusal (KanbanError) becomes the tool's error result. */
async function onBoard(ctx: ToolContext, b: string | undefined, fn: (sql: Sql, scope: KanbanScope) => Promise<string>): Promise<string> {
  if (!ctx.kanban) return toolError(NO_KANBAN);
  try {
    return await ctx.kanban.run(fn, b);
  } catch (err) {
    if (err instanceof KanbanError) return toolError(err.message, { code: err.code });
    throw err;
  }
}

function taskIdOf(scope: KanbanScope, id: string | undefined): string {
  if (id) return id;
  if (scope.mode === 'worker') return scope.taskId;
  throw new KanbanError('invalid', 'task_id is required (this turn was not dispatched for a task).');
}

const summary = (t: KanbanTask) => ({ id: t.id, title: t.title, status: t.status, assignee: t.assignee, priority: t.priority, block_kind: t.blockKind, block_reason: t.blockReason, result: t.result });
const now = (ctx: ToolContext) => new Date(ctx.now());

export const kanbanShowTool = defineTool({
  name: 'kanban_show',
  description: 'Read a task\'s full state: title, body, assignee, status, parent handoffs, earlier runs, comments, attachments and recent events. Use it to orient yourself before working, especially on a retry.',
  toolset: 'kanban',
  sideEffect: 'read-only',
  postgresArguments: true,
  schema: z.object({ task_id: taskIdDefault, board }).strict(),
  handler: ({ task_id, board: b }, ctx) => onBoard(ctx, b, async (sql, scope) => JSON.stringify(await showTask(sql, scope, taskIdOf(scope, task_id)))),
});

export const kanbanListTool = defineTool({
  name: 'kanban_list',
  description: `List task summaries on your board to route work: filter by assignee, status; archived tasks only when asked. At most ${LIST_MAX_LIMIT} rows (default 50), with a truncated flag.`,
  toolset: 'kanban',
  sideEffect: 'read-only',
  postgresArguments: true,
  schema: z.object({
    assignee: z.string().optional().describe('Only tasks of this agent (name or namespace/name).'),
    status: z.enum(KANBAN_STATUSES).optional(),
    tenant: z.string().optional().describe('Accepted for compatibility: a board belongs to one namespace, which is its tenant.'),
    include_archived: z.boolean().optional(),
    limit: z.number().int().positive().optional(),
    board,
  }).strict(),
  handler: (a, ctx) => onBoard(ctx, a.board, async (sql, scope) => {
    if (scope.mode === 'worker') throw new KanbanError('forbidden', 'kanban_list is for the board\'s owner; a dispatched run works on its own task (kanban_show).');
    const { tasks, truncated } = await listTasks(sql, scope, { ...(a.status ? { status: a.status } : {}), ...(a.assignee ? { assignee: a.assignee } : {}), includeArchived: a.include_archived ?? false, ...(a.limit ? { limit: a.limit } : {}) });
    return JSON.stringify({ tasks: tasks.map(summary), count: tasks.length, truncated });
  }),
});

const unsupported = ['workspace_kind', 'workspace_path', 'skills', 'goal_mode', 'goal_max_turns'] as const;

export const kanbanCreateTool = defineTool({
  name: 'kanban_create',
  description: 'Create a task on your board, optionally as a child of others (parents): it waits in todo until every parent is done, then the dispatcher starts the assignee\'s turn. Use it to fan work out, then complete your own task.',
  toolset: 'kanban',
  sideEffect: 'writes',
  postgresArguments: true,
  schema: z.object({
    title: z.string().min(1).max(KANBAN_TEXT_LIMITS.title).describe('Short task title.'),
    assignee: z.string().min(1).max(510).describe('Agent that should run it (name or namespace/name). On a person\'s board: this agent.'),
    body: z.string().max(KANBAN_TEXT_LIMITS.body).optional().describe('Full spec and acceptance criteria: the assignee reads it.'),
    parents: z.array(z.string()).max(100).optional().describe('Parent task ids this one waits for.'),
    tenant: z.string().optional().describe('Accepted for compatibility: the board\'s namespace is the tenant.'),
    priority: z.number().int().optional().describe('Higher is dispatched sooner.'),
    triage: z.boolean().optional().describe('true: the task lands in triage for a person instead of todo.'),
    idempotency_key: z.string().max(KANBAN_TEXT_LIMITS.idempotencyKey).optional().describe('A task on this board with this key (not archived) is returned instead of a duplicate.'),
    max_runtime_seconds: z.number().int().positive().optional().describe('Per-task runtime cap; a longer run is stopped (timed_out).'),
    initial_status: z.enum(['running', 'blocked']).optional().describe('blocked: starts blocked for a person; running (default): the usual dispatch path.'),
    workspace_kind: z.string().optional(), workspace_path: z.string().optional(), skills: z.array(z.string()).optional(), goal_mode: z.boolean().optional(), goal_max_turns: z.number().int().optional(),
    board,
  }).strict(),
  handler: (a, ctx) => {
    const set = unsupported.filter((k) => a[k] !== undefined);
    if (set.length) return toolError(`Not supported here: ${set.join(', ')}. The assignee's Profile decides its workspace (sandbox) and skills; omit these.`);
    return onBoard(ctx, a.board, async (sql, scope) => {
      const { task, created } = await createTask(sql, scope, {
        title: a.title, assignee: a.assignee, ...(a.body ? { body: a.body } : {}), ...(a.parents ? { parents: a.parents } : {}), ...(a.priority !== undefined ? { priority: a.priority } : {}),
        ...(a.triage ? { triage: true } : {}), ...(a.idempotency_key ? { idempotencyKey: a.idempotency_key } : {}), ...(a.max_runtime_seconds ? { maxRuntimeSeconds: a.max_runtime_seconds } : {}),
        ...(a.initial_status === 'blocked' ? { initialStatus: 'blocked' as const } : {}),
      }, now(ctx));
      return ok({ task_id: task.id, status: task.status, created });
    });
  },
});

export const kanbanLinkTool = defineTool({
  name: 'kanban_link',
  description: 'Add a parent → child dependency between two existing tasks: the child is not started until every parent is done. Cycles and self-links are refused.',
  toolset: 'kanban',
  sideEffect: 'writes',
  postgresArguments: true,
  schema: z.object({ parent_id: z.string().min(1), child_id: z.string().min(1), board }).strict(),
  handler: (a, ctx) => onBoard(ctx, a.board, async (sql, scope) => {
    await linkTasks(sql, scope, a.parent_id, a.child_id, now(ctx));
    return ok({ parent_id: a.parent_id, child_id: a.child_id });
  }),
});

export const kanbanCommentTool = defineTool({
  name: 'kanban_comment',
  description: 'Append a comment to a task\'s thread: durable notes that outlive this run (questions for the next worker, findings, rationale).',
  toolset: 'kanban',
  sideEffect: 'writes',
  postgresArguments: true,
  schema: z.object({ task_id: z.string().min(1).describe('Task id (yours or another task on the board).'), body: z.string().min(1).max(20_000), board }).strict(),
  handler: (a, ctx) => onBoard(ctx, a.board, async (sql, scope) => ok({ comment_id: (await addComment(sql, scope, a.task_id, a.body, now(ctx))).id })),
});

export const kanbanCompleteTool = defineTool({
  name: 'kanban_complete',
  description: 'Mark your task done with a handoff: summary (1-3 sentences for people and the tasks that depend on it), metadata (structured facts), created_cards (ids kanban_create returned in this run; checked), artifacts (references to deliverables: URLs or workspace paths; stored by reference).',
  toolset: 'kanban',
  sideEffect: 'writes',
  postgresArguments: true,
  schema: z.object({
    task_id: taskIdDefault,
    summary: z.string().max(20_000).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    result: z.string().max(20_000).optional().describe('Short result line (older field); prefer summary.'),
    created_cards: z.array(z.string()).max(200).optional(),
    artifacts: z.array(z.string()).max(50).optional().describe('References to deliverables: http(s) URLs, s3:// or gs:// references, or workspace paths (/workspace/…).'),
    board,
  }).strict(),
  handler: (a, ctx) => onBoard(ctx, a.board, async (sql, scope) => {
    const id = taskIdOf(scope, a.task_id);
    for (const ref of a.artifacts ?? []) {
      const r = ref.startsWith('/') ? `workspace:${ref}` : ref;
      await addAttachment(sql, scope, id, { name: ref.split('/').pop() || ref, ref: r }, now(ctx));
    }
    const t = await completeTask(sql, scope, id, {
      ...(a.summary ? { summary: a.summary } : {}), ...(a.result ? { result: a.result } : {}), ...(a.metadata ? { metadata: a.metadata } : {}), ...(a.created_cards ? { createdCards: a.created_cards } : {}),
    }, now(ctx));
    return ok({ task_id: t.id, status: t.status });
  }),
});

export const kanbanBlockTool = defineTool({
  name: 'kanban_block',
  description: 'Block your task because you need a person: reason is the question they must answer (shown on the board). Only for genuine blockers. A task blocked again after two unblocks goes to triage.',
  toolset: 'kanban',
  sideEffect: 'writes',
  postgresArguments: true,
  schema: z.object({ task_id: taskIdDefault, reason: z.string().min(1).max(4_000), kind: z.enum(BLOCK_KINDS).optional().describe('dependency, needs_input (default), capability, or transient.'), board }).strict(),
  handler: (a, ctx) => onBoard(ctx, a.board, async (sql, scope) => {
    const id = taskIdOf(scope, a.task_id);
    const status = await blockTask(sql, scope, id, { reason: a.reason, ...(a.kind ? { kind: a.kind } : {}) }, now(ctx));
    return ok({ task_id: id, status });
  }),
});

export const kanbanUnblockTool = defineTool({
  name: 'kanban_unblock',
  description: 'Move a blocked task back to ready (todo while a parent is not done), or a triaged one to todo. For the board\'s owner; dispatched runs never see it.',
  toolset: 'kanban',
  sideEffect: 'writes',
  postgresArguments: true,
  schema: z.object({ task_id: z.string().min(1), board }).strict(),
  handler: (a, ctx) => onBoard(ctx, a.board, async (sql, scope) => ok({ task_id: a.task_id, status: await unblockTask(sql, scope, a.task_id, now(ctx)) })),
});

export const kanbanHeartbeatTool = defineTool({
  name: 'kanban_heartbeat',
  description: 'Say you are still working during a long operation (call every few minutes): a run without a heartbeat for the stale timeout is stopped. Changes no work.',
  toolset: 'kanban',
  sideEffect: 'writes',
  postgresArguments: true,
  schema: z.object({ task_id: taskIdDefault, note: z.string().max(2_000).optional().describe('Short progress note for the event log.'), board }).strict(),
  handler: (a, ctx) => onBoard(ctx, a.board, async (sql, scope) => {
    const id = taskIdOf(scope, a.task_id);
    await heartbeatTask(sql, scope, id, { note: a.note, claimTtlSeconds: ctx.kanban!.claimTtlSeconds }, now(ctx));
    return ok({ task_id: id });
  }),
});

export const kanbanTools = [kanbanShowTool, kanbanListTool, kanbanCreateTool, kanbanLinkTool, kanbanCommentTool, kanbanCompleteTool, kanbanBlockTool, kanbanUnblockTool, kanbanHeartbeatTool];
