// GET /v1/agents/:namespace/:name/admissions/:id/events — the turn as server-sent events:
// `state` on each state change, `delta` {text} as the worker streams, then one `reply`
// {content, outcome, state} (also for `unknown`: the content then says the turn was interrupted
// and not re-run) and the stream ends; `error` {code, message} when we stop following early
// (timeout, shutdown, ledger unreachable); `approval.pending` {id, command, reason, expiresAt,
// message} when a command waits for `/approve` or `/deny` (also to a client that joins late: read
// from Postgres), `approval.resolved` {id, status, …} when it ends; `clarify.pending` {id, question,
// choices, expiresAt, message} when the agent asked a clarify question (the caller's next message
// answers it; also to a client that joins late), `clarify.resolved` {id, status, …} when the wait
// ended. Only the key that admitted it may follow it; each
// stream takes one of the key's HERMES_MAX_WAITS_PER_KEY slots.
import type { FastifyInstance } from 'fastify';
import { HermesError, approvalPendingMessage, clarifyEventOf, pendingApprovalsOf, pendingClarificationOf } from '../../core/index.js';
import { admissionLinks, waitSignal, type GatewayContext } from '../context.js';
import { hermesErrorBody, toApiError } from '../errors.js';
import { openSse, sseHead } from '../sse.js';
import type { ApprovalEvent, ClarifyEvent } from '../waiter.js';
import { admissionTarget, belongsTo, notFound } from './admissions.js';

export function registerAdmissionEventRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/v1/agents/:namespace/:name/admissions/:id/events', async (request, reply) => {
    const target = await admissionTarget(ctx, request);
    const { id, namespace, name } = target;
    const release = ctx.waits.acquire(target.caller.keyId);
    try {
      if (request.clientGone.aborted) throw new HermesError('HERMES_CLIENT_CLOSED_REQUEST');
      // An id that does not exist gets the same 404 as another key's: nothing tells them apart.
      const follower = await ctx.waiter.follow(id).catch((err: unknown) => {
        throw err instanceof HermesError && err.code === 'HERMES_ADMISSION_NOT_FOUND' ? notFound(id, namespace, name) : err;
      });
      try {
        if (!belongsTo(follower.first, target)) throw notFound(id, namespace, name);
        if (request.method === 'HEAD') return sseHead(reply);
        const sse = openSse(request, reply, { heartbeatMs: ctx.deps.tuning?.heartbeatMs });
        const wait = waitSignal(ctx, request, admissionLinks(namespace, name, id));
        const seen = new Set<string>();
        const approval = (a: ApprovalEvent) => {
          if (seen.has(`${a.id}:${a.status}`)) return;
          seen.add(`${a.id}:${a.status}`);
          sse.send(a, a.status === 'pending' ? 'approval.pending' : 'approval.resolved');
        };
        const clarify = (c: ClarifyEvent) => {
          if (seen.has(`${c.id}:${c.status}`)) return;
          seen.add(`${c.id}:${c.status}`);
          sse.send(c, c.status === 'pending' ? 'clarify.pending' : 'clarify.resolved');
        };
        try {
          for (const a of await pendingApprovalsOf(ctx.deps.db.pool, id)) approval({ id: a.id, status: a.status, command: a.command, reason: a.reason, expiresAt: a.expiresAt, message: approvalPendingMessage(a) });
          // Only a started turn can be waiting on a question; one asked later is published after we subscribed.
          const asked = follower.first.state === 'started' ? await pendingClarificationOf(ctx.deps.db.pool, id) : undefined;
          if (asked) clarify(clarifyEventOf(asked));
          const end = await follower.untilDone({
            signal: wait.signal,
            onApproval: approval,
            onClarify: clarify,
            onDelta: (text) => sse.send({ text }, 'delta'),
            onState: (a) => sse.send({ state: a.state, outcome: a.outcome }, 'state'),
          });
          sse.send({ content: end.reply?.content ?? null, outcome: end.admission.outcome, state: end.admission.state }, 'reply');
        } catch (err) {
          if (!sse.clientGone.aborted) sse.send(hermesErrorBody(toApiError(err, request, ctx.deps.config.HERMES_MAX_BODY_BYTES)).error, 'error');
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
  });
}
