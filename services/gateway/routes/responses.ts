// The OpenAI Responses API, as Hermes' API server serves it:
//   POST   /v1/responses        admit a turn, wait for it (or stream it, or with `background`
//                                answer at once) and answer the `response` object;
//   GET    /v1/responses/{id}   a stored response, as it stands now;
//   DELETE /v1/responses/{id}   forget a stored response (the session's transcript stays).
// A response id maps durably (api_turns, Postgres) to its admission and conversation, so
// `previous_response_id` continues that conversation's session on any replica, after restarts.
// Without it (or a named `conversation`), each response starts a conversation of its own, whose
// earlier `input` items are the caller's history. Only the key (and user) that made a response
// may read, delete or continue it; anything else is a 404.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { HermesError, deleteApiTurn, injectTraceContext, type AgentRecord, type ApiTurn, type CallerMessage } from '../../core/index.js';
import { continueTurn, enqueueStarted, ownedApiTurn, replayed, replayOf, requestHash, resolveAgent, startApiTurn, type ApiTurnSpec, type StartedApiTurn } from '../api-turns.js';
import type { ApiUser } from '../admission.js';
import { callerFrom, type Caller } from '../auth.js';
import { waitSignal, type GatewayContext } from '../context.js';
import { streamResponse } from '../openai/response-stream.js';
import { responseBody, responseObject, responseState, splitInput, turnHistory, type ResponseBody } from '../openai/responses.js';
import { readTurnView, viewOfEnd } from '../turn-view.js';
import { headerValue, optionalBody, parseInput, singleLine } from '../validation.js';

const idParams = z.object({ id: singleLine.min(1).max(256) });
const links = (id: string) => ({ self: `/v1/responses/${id}` });

interface Continuation { agent: AgentRecord; conversation: string; apiUser?: string; actAs?: ApiUser; previous?: ApiTurn }

/** The agent, conversation and user of the new turn: those of `previous_response_id`, else of the request. */
async function continuation(ctx: GatewayContext, caller: Caller, body: ResponseBody): Promise<Continuation> {
  const named = typeof body.conversation === 'string' ? body.conversation : body.conversation?.id;
  if (!body.previous_response_id) {
    const agent = await resolveAgent(ctx, caller, body.model);
    return { agent, conversation: named ?? `resp-${randomUUID()}`, ...(body.user !== undefined ? { apiUser: body.user } : {}) };
  }
  if (named !== undefined) throw new HermesError('HERMES_BAD_REQUEST', 'Send previous_response_id or conversation, not both.');
  const { turn, agent, actAs } = await continueTurn(ctx, caller, body.previous_response_id, { model: body.model, user: body.user });
  return { agent, conversation: turn.conversation, ...(turn.apiUser !== null ? { apiUser: turn.apiUser } : {}), actAs, previous: turn };
}

async function answer(ctx: GatewayContext, request: FastifyRequest, reply: FastifyReply, started: StartedApiTurn, o: { stream: boolean; fresh: boolean }) {
  const { turn } = started;
  const trace = injectTraceContext(request.otelContext);
  // The client already left: the admission stands (and is enqueued), nobody follows it.
  if (request.clientGone.aborted) {
    await enqueueStarted(ctx, request.log, started, trace);
    throw new HermesError('HERMES_CLIENT_CLOSED_REQUEST');
  }
  // Subscribe before the job exists, so no delta of this turn can be published unheard.
  const follower = await ctx.waiter.follow(turn.admissionId, { fresh: o.fresh, deltas: o.stream });
  try {
    await enqueueStarted(ctx, request.log, started, trace);
    const headers: Record<string, string> = started.replayed ? { 'idempotency-replayed': 'true' } : {};
    if (o.stream) {
      await streamResponse(ctx, { request, reply, follower, turn, links: links(turn.id), headers });
      return reply;
    }
    const wait = waitSignal(ctx, request, links(turn.id));
    try {
      const end = await follower.untilDone({ signal: wait.signal });
      return reply.headers(headers).send(responseObject(turn, responseState(viewOfEnd(end))));
    } finally {
      wait.dispose();
      if (ctx.shutdown.aborted) reply.header('connection', 'close');
    }
  } finally {
    follower.close();
  }
}

function checkModes(body: ResponseBody): void {
  if (body.background && body.stream) throw new HermesError('HERMES_BAD_REQUEST', 'Send background or stream, not both: follow a background response with GET /v1/responses/{id}.');
  if (body.background && body.store === false) throw new HermesError('HERMES_BAD_REQUEST', 'A background response must be stored (store: true) to be read later.');
}

/** The turn to start: the request's input, its continuation, and what a replay must match. */
function responseSpec(request: FastifyRequest, caller: Caller, body: ResponseBody, c: Continuation, input: { content: string; callerHistory: CallerMessage[]; idempotencyKey: string | undefined }): ApiTurnSpec {
  const { idempotencyKey } = input;
  return {
    kind: 'response', agent: c.agent, caller, content: input.content, conversation: c.conversation, store: body.store !== false,
    requestHash: requestHash('response', request.body), trace: injectTraceContext(request.otelContext),
    ...(c.apiUser !== undefined ? { apiUser: c.apiUser } : {}),
    ...(c.actAs ? { actAs: c.actAs } : {}),
    ...(input.callerHistory.length ? { callerHistory: input.callerHistory } : {}),
    ...(c.previous ? { previousId: c.previous.id } : {}),
    ...(body.instructions ? { instructions: body.instructions } : {}),
    ...(body.metadata ? { metadata: body.metadata } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
  };
}

async function createResponse(ctx: GatewayContext, request: FastifyRequest, reply: FastifyReply) {
  const caller = callerFrom(request);
  const body = parseInput(responseBody(ctx.deps.config.HERMES_MAX_MESSAGE_CHARS), request.body, 'body');
  const idempotencyKey = headerValue(request.headers['idempotency-key'], 'Idempotency-Key');
  const { content, history } = splitInput(body.input, ctx.deps.config.HERMES_MAX_MESSAGE_CHARS);
  checkModes(body);
  // A replay answers the turn this key made before, whatever became of what it continued.
  const earlier = await replayOf(ctx, caller, 'response', idempotencyKey, requestHash('response', request.body));
  const c = earlier ? undefined : await continuation(ctx, caller, body);
  const continued = c?.previous !== undefined || body.conversation != null;
  const background = body.background === true;
  // A background response holds no wait slot: nothing waits for it here.
  const release = background ? () => undefined : ctx.waits.acquire(caller.keyId);
  try {
    const callerHistory = turnHistory(body.instructions, history, continued);
    const started = earlier ? await replayed(ctx, earlier) : await startApiTurn(ctx, request.log, responseSpec(request, caller, body, c!, { content, callerHistory, idempotencyKey }));
    if (!background) return await answer(ctx, request, reply, started, { stream: body.stream === true, fresh: !continued && !started.replayed });
    await enqueueStarted(ctx, request.log, started, injectTraceContext(request.otelContext));
    const view = await readTurnView(ctx.deps.db, started.turn.admissionId);
    if (started.replayed) reply.header('idempotency-replayed', 'true');
    return reply.send(responseObject(started.turn, view ? responseState(view) : { status: 'queued', error: null }, { background: true }));
  } finally {
    release();
  }
}

/** A response the caller may read: its own, stored, not deleted. */
async function storedResponse(ctx: GatewayContext, request: FastifyRequest): Promise<ApiTurn> {
  const caller = callerFrom(request);
  const { id } = parseInput(idParams, request.params, 'params');
  const { turn } = await ownedApiTurn(ctx, caller, 'response', id);
  if (!turn.store) throw new HermesError('HERMES_RESPONSE_NOT_FOUND', `"${id}" was created with store: false.`);
  return turn;
}

export function registerResponseRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.post('/v1/responses', (request, reply) => createResponse(ctx, request, reply));

  app.get('/v1/responses/:id', async (request) => {
    const turn = await storedResponse(ctx, request);
    const view = await readTurnView(ctx.deps.db, turn.admissionId);
    return responseObject(turn, view ? responseState(view) : { status: 'failed', error: { code: 'server_error', message: 'The turn of this response is gone.' } });
  });

  app.delete('/v1/responses/:id', optionalBody, async (request) => {
    const turn = await storedResponse(ctx, request);
    if (!(await deleteApiTurn(ctx.deps.db.pool, turn.id))) throw new HermesError('HERMES_RESPONSE_NOT_FOUND', `"${turn.id}" was already deleted.`);
    return { id: turn.id, object: 'response', deleted: true };
  });
}
