// The OpenAI-compatible API: GET /v1/models (the agents this key may use), GET /v1/models/{model}, and
// POST /v1/chat/completions (admit, wait for the turn, answer as a chat completion).
// Without an X-Hermes-Session-Id header each request is its own conversation, carrying its
// history in `messages`; the response's X-Hermes-Session-Id names that conversation, and a
// request sending it back continues the stored session (then only the last message is used).
// A completion takes one of the key's HERMES_MAX_WAITS_PER_KEY slots for as long as it waits
// (429 before anything is admitted when none is free); a client that hangs up at any moment
// leaves nothing following the turn, which still runs and records its reply.
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { HermesError, injectTraceContext } from '../../core/index.js';
import { admitApiMessage, enqueueSoon } from '../admission.js';
import { agentName, authorizeAgent, callerFrom, usableAgents } from '../auth.js';
import { admissionLinks, waitSignal, type GatewayContext } from '../context.js';
import { chatCompletionBody, parseModel, splitMessages } from '../openai/request.js';
import { completion, completionIds, replyText } from '../openai/response.js';
import { streamCompletion } from '../openai/stream.js';
import { agentParams, headerValue, parseInput, pickEventId, singleLine } from '../validation.js';
import type { AdmissionFollower } from '../waiter.js';

const sessionHeader = 'x-hermes-session-id';
const modelParams = z.object({ model: singleLine.min(1).max(512) });

interface CompletionWait { request: FastifyRequest; reply: FastifyReply; follower: AdmissionFollower; links: { self: string }; model: string }

async function waitForCompletion(ctx: GatewayContext, { request, reply, follower, links, model }: CompletionWait) {
  const wait = waitSignal(ctx, request, links);
  try {
    const end = await follower.untilDone({ signal: wait.signal });
    const text = replyText(end);
    return completion(completionIds(follower.admissionId, model), text, end.usage);
  } finally {
    wait.dispose();
    if (ctx.shutdown.aborted) reply.header('connection', 'close');
  }
}

async function listModels(ctx: GatewayContext, request: FastifyRequest) {
  const usable = await usableAgents(ctx.deps.agents, callerFrom(request));
  return { object: 'list', data: [...usable].sort().map(modelEntry) };
}

async function chatCompletions(ctx: GatewayContext, request: FastifyRequest, reply: FastifyReply) {
  const caller = callerFrom(request);
  const body = parseInput(chatCompletionBody, request.body, 'body');
  const { namespace, name } = parseModel(body.model);
  const agent = await authorizeAgent(ctx.deps.agents, caller, namespace, name);
  const { content, history } = splitMessages(body.messages, ctx.deps.config.HERMES_MAX_MESSAGE_CHARS);
  const named = headerValue(request.headers[sessionHeader], 'X-Hermes-Session-Id');
  const eventId = pickEventId(undefined, request.headers['idempotency-key']);
  const release = ctx.waits.acquire(caller.keyId);
  try {
    // Without a named session, a retry (same Idempotency-Key) gets the same session id as the first request.
    const conversation = named ?? `chat-${eventId === undefined ? randomUUID() : createHash('sha256').update(`${caller.keyId}:${eventId}`).digest('hex').slice(0, 32)}`;
    const trace = injectTraceContext(request.otelContext);
    const admitted = await admitApiMessage(ctx, agent, caller, {
      content, userId: body.user, conversation, trace, ...(eventId !== undefined ? { eventId, scope: 'chat' as const } : {}),
      ...(named === undefined && history.length > 0 ? { callerHistory: history } : {}),
      replyOnly: true, // the caller sees only the reply: nobody could answer a clarify question
    }, request.log);
    request.log.info({ agent: agentName(agent), admissionId: admitted.admissionId, sessionId: admitted.sessionId, duplicate: admitted.duplicate }, 'Admitted chat completion');
    const enqueue = () => (admitted.state === 'queued' ? enqueueSoon(ctx, request.log, admitted, trace) : Promise.resolve(true));
    // The client already left: the admission stands (and is enqueued), nobody follows it.
    if (request.clientGone.aborted) {
      await enqueue();
      throw new HermesError('HERMES_CLIENT_CLOSED_REQUEST');
    }
    // Subscribe before the job exists, so no delta of this turn can be published unheard.
    // A new stateless conversation (no X-Hermes-Session-Id): nothing else can have run its turn.
    const follower = await ctx.waiter.follow(admitted.admissionId, { fresh: named === undefined && !admitted.duplicate, deltas: body.stream === true });
    try {
      await enqueue();
      const links = admissionLinks(namespace, name, admitted.admissionId);
      const model = agentName(agent);
      const headers = { [sessionHeader]: conversation, 'x-hermes-admission-id': admitted.admissionId };
      if (body.stream) {
        await streamCompletion(ctx, { request, reply, follower, ids: completionIds(admitted.admissionId, model), links, headers });
        return reply;
      }
      reply.headers(headers);
      return await waitForCompletion(ctx, { request, reply, follower, links, model });
    } finally {
      follower.close();
    }
  } finally {
    release();
  }
}

const modelEntry = (id: string) => ({ id, object: 'model', created: 0, owned_by: 'hermes' });

/** GET /v1/models/{model} (the SDK's models.retrieve): `<ns>/<name>` percent-encoded in one segment, as the SDK sends it, or in two. */
async function retrieveModel(ctx: GatewayContext, request: FastifyRequest, model: string) {
  const { namespace, name } = parseModel(model);
  await authorizeAgent(ctx.deps.agents, callerFrom(request), namespace, name);
  return modelEntry(`${namespace}/${name}`);
}

export function registerOpenAiRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/v1/models', (request) => listModels(ctx, request));
  app.get('/v1/models/:model', (request) => retrieveModel(ctx, request, parseInput(modelParams, request.params, 'params').model));
  app.get('/v1/models/:namespace/:name', (request) => {
    const p = parseInput(agentParams, request.params, 'params');
    return retrieveModel(ctx, request, `${p.namespace}/${p.name}`);
  });
  app.post('/v1/chat/completions', (request, reply) => chatCompletions(ctx, request, reply));
}
