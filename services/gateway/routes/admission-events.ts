// GET /v1/agents/:namespace/:name/admissions/:id/events — the turn as server-sent events:
// `state` on each state change, `delta` {text} as the worker streams, then one `reply`
// {content, outcome, state} (also for `unknown`: the content then says the turn was interrupted
// and not re-run) and the stream ends; `error` {code, message} when we stop following early
// (timeout, shutdown, ledger unreachable).
import type { FastifyInstance } from 'fastify';
import { admissionLinks, waitSignal, type GatewayContext } from '../context.js';
import { hermesErrorBody, toApiError } from '../errors.js';
import { openSse } from '../sse.js';
import { admissionTarget, notFound } from './admissions.js';

export function registerAdmissionEventRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/v1/agents/:namespace/:name/admissions/:id/events', async (request, reply) => {
    const { agent, id, namespace, name } = await admissionTarget(ctx, request);
    const follower = await ctx.waiter.follow(id);
    if (follower.first.agentId !== agent.agentId) {
      follower.close();
      throw notFound(id, namespace, name);
    }
    const sse = openSse(reply, { heartbeatMs: ctx.deps.tuning?.heartbeatMs });
    const wait = waitSignal(ctx, reply, admissionLinks(namespace, name, id), sse.clientGone);
    try {
      const end = await follower.untilDone({
        signal: wait.signal,
        onDelta: (text) => sse.send({ text }, 'delta'),
        onState: (a) => sse.send({ state: a.state, outcome: a.outcome }, 'state'),
      });
      sse.send({ content: end.reply?.content ?? null, outcome: end.admission.outcome, state: end.admission.state }, 'reply');
    } catch (err) {
      if (!sse.clientGone.aborted) sse.send(hermesErrorBody(toApiError(err, request, ctx.deps.config.HERMES_MAX_BODY_BYTES)).error, 'error');
    } finally {
      wait.dispose();
      follower.close();
      sse.end(ctx.shutdown.aborted);
    }
  });
}
