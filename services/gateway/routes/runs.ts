// Hermes' runs API: start a turn and follow it apart.
//   POST /v1/runs              admit a turn; 202 {run_id, status, replayed} at once;
//   GET  /v1/runs/{id}         the run as it stands (object "hermes.run");
//   GET  /v1/runs/{id}/events  server-sent events: run.status on each state change,
//                              message.delta as the worker streams, approval.request /
//                              approval.resolved, then one of run.completed | run.failed |
//                              run.cancelled | run.interrupted, and the stream ends (`error` when
//                              following stops early: timeout, shutdown, ledger unreachable);
//   POST /v1/runs/{id}/stop    stop it: a `/stop` admitted into the run's session (the message
//                              API's signal path), once per run however often it is asked.
// A run id maps durably (api_turns) to its admission; only the key (and user) that started it may
// see or stop it. Each event stream takes one of the key's HERMES_MAX_WAITS_PER_KEY slots.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { HermesError, approvalPendingMessage, injectTraceContext, pendingApprovalsOf, type ApiTurn, type TraceCarrier } from '../../core/index.js';
import { admitApiMessage, enqueueSoon, turnUser } from '../admission.js';
import { continueTurn, enqueueStarted, ownedApiTurn, replayed, replayOf, requestHash, resolveAgent, startApiTurn } from '../api-turns.js';
import { callerFrom, type Caller } from '../auth.js';
import { waitSignal, type GatewayContext } from '../context.js';
import { openAiErrorBody, toApiError } from '../errors.js';
import { splitInput, turnHistory, turnInput } from '../openai/responses.js';
import { openSse, sseHead } from '../sse.js';
import { readTurnView, viewOfEnd, type TurnView } from '../turn-view.js';
import { freeText, headerValue, identifier, optionalBody, parseInput, singleLine } from '../validation.js';
import type { ApprovalEvent } from '../waiter.js';

const runBody = (maxChars: number) => z.object({
  model: singleLine.min(1).max(512).optional(),
  input: turnInput,
  instructions: freeText.max(maxChars).nullish(),
  /** Continues (or starts) the caller's conversation of this name, as X-Hermes-Session-Id does. */
  session_id: identifier.nullish(),
  previous_response_id: singleLine.min(1).max(256).nullish(),
  conversation_history: z.array(z.object({ role: z.enum(['system', 'developer', 'user', 'assistant']), content: freeText.max(maxChars) })).nullish(),
  user: identifier.optional(),
});
type RunBody = z.infer<ReturnType<typeof runBody>>;

const idParams = z.object({ id: singleLine.min(1).max(256) });

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted';

/** The run's status and what its end says, in Hermes' words. */
export function runState(view: TurnView): { status: RunStatus; output?: string; error?: string; usage?: { input_tokens: number; output_tokens: number; total_tokens: number } } {
  const { admission, end } = view;
  if (admission.state === 'queued') return { status: 'queued' };
  if (!end) return { status: 'running' };
  const usage = { input_tokens: end.usage.inputTokens, output_tokens: end.usage.outputTokens, total_tokens: end.usage.inputTokens + end.usage.outputTokens };
  const text = end.reply?.content;
  if (admission.state === 'unknown') return { status: 'interrupted', error: 'The process running this turn stopped; it was not run again because it may already have had effects. Send /retry in its session to run it again.', usage };
  if (admission.outcome === 'completed') return { status: 'completed', output: text ?? '', usage };
  if (admission.outcome === 'failed') return { status: 'failed', error: text ?? 'The agent could not answer.', usage };
  return { status: 'cancelled', ...(text !== undefined ? { output: text } : {}), usage };
}

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

function runObject(turn: ApiTurn, view: TurnView | undefined) {
  const state = view ? runState(view) : { status: 'interrupted' as const, error: 'The turn of this run is gone.' };
  return { object: 'hermes.run', run_id: turn.id, model: turn.model, session_id: turn.sessionId, conversation: turn.conversation, created_at: seconds(turn.createdAt), ...state };
}

async function runConversation(ctx: GatewayContext, caller: Caller, body: RunBody) {
  if (body.previous_response_id) {
    if (body.session_id) throw new HermesError('HERMES_BAD_REQUEST', 'Send previous_response_id or session_id, not both.');
    const { turn, agent, actAs } = await continueTurn(ctx, caller, body.previous_response_id, { model: body.model, user: body.user });
    return { agent, conversation: turn.conversation, apiUser: turn.apiUser ?? undefined, actAs, previousId: turn.id, continued: true };
  }
  const agent = await resolveAgent(ctx, caller, body.model);
  return { agent, conversation: body.session_id ?? `run-${randomUUID()}`, apiUser: body.user, actAs: undefined, previousId: undefined, continued: body.session_id != null };
}

async function startRun(ctx: GatewayContext, request: FastifyRequest, reply: FastifyReply) {
  const caller = callerFrom(request);
  const maxChars = ctx.deps.config.HERMES_MAX_MESSAGE_CHARS;
  const body = parseInput(runBody(maxChars), request.body, 'body');
  const idempotencyKey = headerValue(request.headers['idempotency-key'], 'Idempotency-Key');
  const input = splitInput(body.input, maxChars);
  const trace = injectTraceContext(request.otelContext);
  const hash = requestHash('run', request.body);
  // A replay answers the run this key made before, whatever became of what it continued.
  const earlier = await replayOf(ctx, caller, 'run', idempotencyKey, hash);
  const started = earlier ? await replayed(ctx, earlier) : await admitRun(ctx, request, { caller, body, input, hash, trace, idempotencyKey });
  await enqueueStarted(ctx, request.log, started, trace);
  let status: string = 'started';
  if (started.replayed) {
    reply.header('idempotency-replayed', 'true');
    const view = await readTurnView(ctx.deps.db, started.turn.admissionId);
    status = view ? runState(view).status : 'interrupted';
  }
  return reply.code(202).send({ run_id: started.turn.id, status, replayed: started.replayed });
}

async function admitRun(ctx: GatewayContext, request: FastifyRequest, r: { caller: Caller; body: RunBody; input: ReturnType<typeof splitInput>; hash: string; trace: TraceCarrier; idempotencyKey: string | undefined }) {
  const { caller, body, input, trace, idempotencyKey } = r;
  const c = await runConversation(ctx, caller, body);
  const history = body.conversation_history?.map((m) => ({ role: m.role === 'developer' ? 'system' as const : m.role, content: m.content })) ?? input.history;
  const callerHistory = turnHistory(body.instructions, history, c.continued);
  return startApiTurn(ctx, request.log, {
    kind: 'run', agent: c.agent, caller, content: input.content, conversation: c.conversation, store: true,
    requestHash: r.hash, trace,
    ...(c.apiUser !== undefined ? { apiUser: c.apiUser } : {}),
    ...(c.actAs ? { actAs: c.actAs } : {}),
    ...(callerHistory.length ? { callerHistory } : {}),
    ...(c.previousId !== undefined ? { previousId: c.previousId } : {}),
    ...(body.instructions ? { instructions: body.instructions } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
  });
}

async function ownedRun(ctx: GatewayContext, request: FastifyRequest) {
  const caller = callerFrom(request);
  const { id } = parseInput(idParams, request.params, 'params');
  return { caller, ...(await ownedApiTurn(ctx, caller, 'run', id)) };
}

const runEvent = (turn: ApiTurn, event: string, fields: Record<string, unknown> = {}) => ({ event, run_id: turn.id, timestamp: Date.now() / 1000, ...fields });

async function followRun(ctx: GatewayContext, request: FastifyRequest, reply: FastifyReply) {
  const { caller, turn } = await ownedRun(ctx, request);
  if (request.method === 'HEAD') return sseHead(reply);
  const release = ctx.waits.acquire(caller.keyId);
  try {
    if (request.clientGone.aborted) throw new HermesError('HERMES_CLIENT_CLOSED_REQUEST');
    const follower = await ctx.waiter.follow(turn.admissionId);
    try {
      const sse = openSse(request, reply, { heartbeatMs: ctx.deps.tuning?.heartbeatMs });
      const wait = waitSignal(ctx, request, { self: `/v1/runs/${turn.id}` });
      const send = (event: string, fields?: Record<string, unknown>) => sse.send(runEvent(turn, event, fields), event);
      const seen = new Set<string>();
      const approval = (a: ApprovalEvent) => {
        if (seen.has(`${a.id}:${a.status}`)) return;
        seen.add(`${a.id}:${a.status}`);
        send(a.status === 'pending' ? 'approval.request' : 'approval.resolved', { approval: a });
      };
      try {
        for (const a of await pendingApprovalsOf(ctx.deps.db.pool, turn.admissionId)) approval({ id: a.id, status: a.status, command: a.command, reason: a.reason, expiresAt: a.expiresAt, message: approvalPendingMessage(a) });
        const end = await follower.untilDone({
          signal: wait.signal,
          onApproval: approval,
          onDelta: (delta) => send('message.delta', { delta }),
          // Only the run's own statuses: the end (terminal, unknown) is the run.<status> event below.
          onState: (a) => { if (a.state === 'queued' || a.state === 'started') send('run.status', { status: a.state === 'queued' ? 'queued' : 'running' }); },
        });
        const { status, ...rest } = runState(viewOfEnd(end));
        send(`run.${status}`, rest);
      } catch (err) {
        const { error } = openAiErrorBody(toApiError(err, request, ctx.deps.config.HERMES_MAX_BODY_BYTES)).body;
        if (!sse.clientGone.aborted) send('error', { error: { code: error.code, message: error.message } });
      } finally {
        wait.dispose();
        sse.end(ctx.shutdown.aborted);
      }
    } finally {
      follower.close();
    }
  } finally {
    release();
  }
}

async function stopRun(ctx: GatewayContext, request: FastifyRequest) {
  const { caller, turn, agent } = await ownedRun(ctx, request);
  const view = await readTurnView(ctx.deps.db, turn.admissionId);
  if (!view || view.end) return runObject(turn, view);
  const trace = injectTraceContext(request.otelContext);
  // The message API's /stop: a signal to the session's running turn, and an admission answered
  // after it — in the run's own session, as the identity that started it (a trusted backend may stop any run).
  const stop = await admitApiMessage(ctx, agent, caller, {
    content: '/stop', conversation: turn.conversation, eventId: turn.id, scope: 'run-stop', actAs: turnUser(turn), trace,
  }, request.log);
  if (stop.state === 'queued') await enqueueSoon(ctx, request.log, stop, trace);
  request.log.info({ run: turn.id, admissionId: turn.admissionId, stopAdmission: stop.admissionId, duplicate: stop.duplicate }, 'Run stop requested');
  return { object: 'hermes.run', run_id: turn.id, status: 'stopping' };
}

export function registerRunRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.post('/v1/runs', (request, reply) => startRun(ctx, request, reply));
  app.get('/v1/runs/:id', async (request) => {
    const { turn } = await ownedRun(ctx, request);
    return runObject(turn, await readTurnView(ctx.deps.db, turn.admissionId));
  });
  app.get('/v1/runs/:id/events', (request, reply) => followRun(ctx, request, reply));
  app.post('/v1/runs/:id/stop', optionalBody, (request) => stopRun(ctx, request));
}
