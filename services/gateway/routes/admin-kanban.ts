// The admin API of the Kanban board (issue 15 point 5), beside `hermes kanban`: operator boards
// `namespace/agent/board` (and people's boards, read and changed by an operator). Served only when
// HERMES_ADMIN_TOKEN is set, and only to requests bearing it (constant-time compare, as the
// pairing admin API); without it the routes do not exist (404). Changes are recorded as `admin-api`.
//   GET  /v1/admin/kanban/boards[?namespace=]
//   GET  /v1/admin/agents/:namespace/:name/kanban/:board/tasks[?status=&assignee=&include_archived=&limit=]
//   POST /v1/admin/agents/:namespace/:name/kanban/:board/tasks        (the board is created on first use)
//   GET  /v1/admin/agents/:namespace/:name/kanban/:board/tasks/:id
//   POST …/tasks/:id/comments {body} · …/attachments {name, ref} · …/links {parent}
//   POST …/tasks/:id/block {reason, kind?} · /unblock · /complete {summary?, result?} · /archive
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  BLOCK_KINDS, HermesError, KANBAN_STATUSES, KANBAN_TEXT_LIMITS, KanbanError, addAttachment, addComment, adminScope, archiveTask, bearerMatches, blockTask, completeTask, createTask, linkTasks, listBoards, listTasks,
  namedBoard, showTask, unblockTask, type KanbanScope, type Sql,
} from '../../core/index.js';
import type { GatewayContext } from '../context.js';
import { agentParams, freeText, optionalBody, parseInput, singleLine } from '../validation.js';

const boardParams = agentParams.extend({ board: z.string().min(1).max(63) });
const taskParams = boardParams.extend({ id: z.string().min(1).max(64) });
const verbParams = taskParams.extend({ verb: z.enum(['block', 'unblock', 'complete', 'archive']) });
const createBody = z.object({
  title: singleLine.min(1).max(KANBAN_TEXT_LIMITS.title), body: freeText.max(KANBAN_TEXT_LIMITS.body).optional(), assignee: singleLine.max(510).optional(), parents: z.array(z.string().max(64)).max(100).optional(),
  priority: z.number().int().optional(), triage: z.boolean().optional(), idempotencyKey: singleLine.max(KANBAN_TEXT_LIMITS.idempotencyKey).optional(), maxRuntimeSeconds: z.number().int().positive().optional(),
  maxRetries: z.number().int().positive().optional(), scheduledAt: z.string().datetime().optional(), by: singleLine.max(200).optional(),
}).strict();
const listQuery = z.object({ status: z.enum(KANBAN_STATUSES).optional(), assignee: singleLine.max(510).optional(), include_archived: z.enum(['true', 'false']).optional(), limit: z.coerce.number().int().positive().optional() }).strict();
const verbBody = z.object({ reason: freeText.max(4_000).optional(), kind: z.enum(BLOCK_KINDS).optional(), summary: freeText.max(20_000).optional(), result: freeText.max(20_000).optional(), by: singleLine.max(200).optional() }).strict();

const kanbanCodes = { not_found: 'HERMES_KANBAN_NOT_FOUND', forbidden: 'HERMES_KANBAN_FORBIDDEN', conflict: 'HERMES_KANBAN_CONFLICT', invalid: 'HERMES_BAD_REQUEST' } as const;

/** A refusal of the board's rules as the API's error (its message says what to do). */
export const kanbanHttpError = (err: KanbanError) => new HermesError(kanbanCodes[err.code], err.message);

export function registerAdminKanbanRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const token = ctx.deps.config.HERMES_ADMIN_TOKEN;
  if (!token) return;
  const { db } = ctx.deps;
  const now = () => new Date(ctx.deps.tuning?.now?.() ?? Date.now());
  const authorised = (request: FastifyRequest) => { if (!bearerMatches(request.headers.authorization, token)) throw new HermesError('HERMES_ADMIN_UNAUTHENTICATED'); };
  /** Runs `fn` in one transaction on board `params` (created when `create`). */
  const onBoard = async <T>(request: FastifyRequest, params: z.infer<typeof boardParams>, fn: (sql: Sql, scope: KanbanScope) => Promise<T>, create = false, by?: string): Promise<T> => {
    authorised(request);
    try {
      return await db.tx(async (sql) => fn(sql, adminScope(await namedBoard(sql, { namespace: params.namespace, agent: params.name, board: params.board }, create), by ? `admin-api:${by}` : 'admin-api')));
    } catch (err) {
      throw err instanceof KanbanError ? kanbanHttpError(err) : err;
    }
  };

  app.get('/v1/admin/kanban/boards', async (request) => {
    authorised(request);
    const q = parseInput(z.object({ namespace: singleLine.max(253).optional() }).strict(), request.query ?? {}, 'query');
    return { boards: await listBoards(db.pool, q.namespace) };
  });

  app.get('/v1/admin/agents/:namespace/:name/kanban/:board/tasks', async (request) => {
    const params = parseInput(boardParams, request.params, 'params');
    const q = parseInput(listQuery, request.query ?? {}, 'query');
    return onBoard(request, params, (sql, scope) => listTasks(sql, scope, { ...(q.status ? { status: q.status } : {}), ...(q.assignee ? { assignee: q.assignee } : {}), includeArchived: q.include_archived === 'true', ...(q.limit ? { limit: q.limit } : {}) }));
  });

  app.post('/v1/admin/agents/:namespace/:name/kanban/:board/tasks', async (request, reply) => {
    const params = parseInput(boardParams, request.params, 'params');
    const { by, scheduledAt, ...body } = parseInput(createBody, request.body ?? {}, 'body');
    const out = await onBoard(request, params, (sql, scope) => createTask(sql, scope, { ...body, ...(scheduledAt ? { scheduledAt: new Date(scheduledAt) } : {}) }, now()), true, by);
    return reply.code(out.created ? 201 : 200).send(out.task);
  });

  app.get('/v1/admin/agents/:namespace/:name/kanban/:board/tasks/:id', async (request) => {
    const params = parseInput(taskParams, request.params, 'params');
    return onBoard(request, params, (sql, scope) => showTask(sql, scope, params.id));
  });

  app.post('/v1/admin/agents/:namespace/:name/kanban/:board/tasks/:id/comments', async (request, reply) => {
    const params = parseInput(taskParams, request.params, 'params');
    const body = parseInput(z.object({ body: freeText.min(1).max(20_000), by: singleLine.max(200).optional() }).strict(), request.body ?? {}, 'body');
    return reply.code(201).send(await onBoard(request, params, (sql, scope) => addComment(sql, scope, params.id, body.body, now()), false, body.by));
  });

  app.post('/v1/admin/agents/:namespace/:name/kanban/:board/tasks/:id/attachments', async (request, reply) => {
    const params = parseInput(taskParams, request.params, 'params');
    const body = parseInput(z.object({ name: singleLine.min(1).max(200), ref: singleLine.min(1).max(2_000), by: singleLine.max(200).optional() }).strict(), request.body ?? {}, 'body');
    return reply.code(201).send(await onBoard(request, params, (sql, scope) => addAttachment(sql, scope, params.id, body, now()), false, body.by));
  });

  app.post('/v1/admin/agents/:namespace/:name/kanban/:board/tasks/:id/links', async (request) => {
    const params = parseInput(taskParams, request.params, 'params');
    const body = parseInput(z.object({ parent: z.string().min(1).max(64) }).strict(), request.body ?? {}, 'body');
    await onBoard(request, params, (sql, scope) => linkTasks(sql, scope, body.parent, params.id, now()));
    return { parent: body.parent, child: params.id };
  });

  app.post('/v1/admin/agents/:namespace/:name/kanban/:board/tasks/:id/:verb', optionalBody, async (request) => {
    const params = parseInput(verbParams, request.params, 'params');
    const b = parseInput(verbBody, request.body ?? {}, 'body');
    return onBoard(request, params, async (sql, scope) => {
      if (params.verb === 'block') await blockTask(sql, scope, params.id, { reason: b.reason ?? '', ...(b.kind ? { kind: b.kind } : {}) }, now());
      if (params.verb === 'unblock') await unblockTask(sql, scope, params.id, now());
      if (params.verb === 'complete') await completeTask(sql, scope, params.id, { ...(b.summary ? { summary: b.summary } : { summary: 'completed by an operator' }), ...(b.result ? { result: b.result } : {}) }, now());
      if (params.verb === 'archive') await archiveTask(sql, scope, params.id, now());
      return (await showTask(sql, scope, params.id)).task;
    }, false, b.by);
  });
}
