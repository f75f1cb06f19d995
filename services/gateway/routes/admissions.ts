// GET /v1/agents/:namespace/:name/admissions/:id — an admission's state and its reply.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { HermesError, getAdmission, getObligationForAdmission, type Admission, type AgentRecord, type Obligation } from '../../core/index.js';
import { authorizeAgent, callerFrom } from '../auth.js';
import type { GatewayContext } from '../context.js';
import { agentParams, parseInput } from '../validation.js';

export const admissionParams = agentParams.extend({ id: z.string() });

export function admissionView(a: Admission, reply: Obligation | undefined) {
  return {
    id: a.id,
    sessionId: a.sessionId,
    state: a.state,
    outcome: a.outcome,
    error: a.error,
    createdAt: a.createdAt,
    startedAt: a.startedAt,
    finishedAt: a.finishedAt,
    reply: reply ? { content: reply.content, delivery: { state: reply.state, attempts: reply.attempts } } : null,
  };
}

/** The agent and the admission id named by the path, after auth; 404 unless the id is a uuid. */
export async function admissionTarget(ctx: GatewayContext, request: Parameters<typeof callerFrom>[0]): Promise<{ agent: AgentRecord; id: string; namespace: string; name: string }> {
  const caller = callerFrom(request);
  const { namespace, name, id } = parseInput(admissionParams, request.params, 'params');
  const agent = await authorizeAgent(ctx.deps.agents, caller, namespace, name);
  if (!z.uuid().safeParse(id).success) throw notFound(id, namespace, name);
  return { agent, id, namespace, name };
}

export const notFound = (id: string, namespace: string, name: string) =>
  new HermesError('HERMES_ADMISSION_NOT_FOUND', `Agent "${namespace}/${name}" has no admission "${id}".`);

export function registerAdmissionRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/v1/agents/:namespace/:name/admissions/:id', async (request) => {
    const { agent, id, namespace, name } = await admissionTarget(ctx, request);
    const admission = await getAdmission(ctx.deps.db.pool, id);
    if (!admission || admission.agentId !== agent.agentId) throw notFound(id, namespace, name);
    return admissionView(admission, await getObligationForAdmission(ctx.deps.db.pool, id));
  });
}
