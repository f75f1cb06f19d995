// POST /v1/agents/:namespace/:name/messages — the durable way in: 202 once the admission is
// committed (200 with `duplicate: true` for a repeated eventId / Idempotency-Key).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { injectTraceContext } from '../../core/index.js';
import { admitApiMessage, enqueueSoon } from '../admission.js';
import { agentName, authorizeAgent, callerFrom } from '../auth.js';
import { admissionLinks, type GatewayContext } from '../context.js';
import { agentParams, freeText, identifier, parseInput, pickEventId, singleLine } from '../validation.js';

const messageBody = (maxChars: number) => z.object({
  content: freeText.min(1).max(maxChars),
  user: z.object({ id: identifier, name: singleLine.min(1).max(256).optional() }).optional(),
  conversation: identifier.optional(),
  eventId: identifier.optional(),
});

export function registerMessageRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const bodySchema = messageBody(ctx.deps.config.HERMES_MAX_MESSAGE_CHARS);

  app.post('/v1/agents/:namespace/:name/messages', async (request, reply) => {
    const caller = callerFrom(request);
    const { namespace, name } = parseInput(agentParams, request.params, 'params');
    const agent = await authorizeAgent(ctx.deps.agents, caller, namespace, name);
    const body = parseInput(bodySchema, request.body, 'body');
    const trace = injectTraceContext(request.otelContext);
    const admitted = await admitApiMessage(ctx, agent, caller, {
      content: body.content,
      userId: body.user?.id,
      userName: body.user?.name,
      conversation: body.conversation,
      eventId: pickEventId(body.eventId, request.headers['idempotency-key']),
      trace,
    }, request.log);
    request.log.info({ agent: agentName(agent), admissionId: admitted.admissionId, sessionId: admitted.sessionId, duplicate: admitted.duplicate }, 'Admitted message');
    // A duplicate still queued may have lost its first enqueue; adding it again is idempotent.
    if (admitted.state === 'queued') await enqueueSoon(ctx, request.log, admitted, trace);
    return reply.code(admitted.duplicate ? 200 : 202).send({ ...admitted, links: admissionLinks(namespace, name, admitted.admissionId) });
  });
}
