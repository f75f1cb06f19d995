// The admin API for DM pairing (issue 11 point 2), beside `hermes pairing`: list an agent's
// pending requests and paired users, approve or deny a request by its code. Served only when
// HERMES_ADMIN_TOKEN is set, and only to requests bearing it (constant-time compare); without it
// the routes do not exist (404). Decisions are recorded as `admin-api` (plus the `by` named).
//   GET  /v1/admin/agents/:namespace/:name/pairings
//   POST /v1/admin/agents/:namespace/:name/pairings/:code/approve|deny   { "platform"?: string, "by"?: string }
// A wrong code is a failed attempt (5 lock the platform's pairing for 1 h, SPEC): 404, then 429.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { HermesError, bearerMatches, findAgent, listPairings, type AgentRecord } from '../../core/index.js';
import type { GatewayContext } from '../context.js';
import { decideAndNotify } from '../pairing.js';
import { agentParams, identifier, optionalBody, parseInput, singleLine } from '../validation.js';

const decideParams = agentParams.extend({ code: z.string().min(1).max(32).regex(/^[A-Za-z0-9-]+$/), verb: z.enum(['approve', 'deny']) });
const decideBody = z.object({ platform: identifier.max(32).optional(), by: singleLine.max(200).optional() }).strict();

export function registerAdminPairingRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const token = ctx.deps.config.HERMES_ADMIN_TOKEN;
  if (!token) return;
  const { db } = ctx.deps;
  const now = () => new Date(ctx.deps.tuning?.now?.() ?? Date.now());
  const agentOf = async (request: FastifyRequest, params: { namespace: string; name: string }): Promise<AgentRecord> => {
    if (!bearerMatches(request.headers.authorization, token)) throw new HermesError('HERMES_ADMIN_UNAUTHENTICATED');
    const agent = await findAgent(db.pool, params.namespace, params.name);
    if (!agent) throw new HermesError('HERMES_AGENT_NOT_FOUND');
    return agent;
  };

  app.get('/v1/admin/agents/:namespace/:name/pairings', async (request) => {
    const agent = await agentOf(request, parseInput(agentParams, request.params, 'params'));
    const { pending, paired } = await listPairings(db.pool, agent.agentId, now());
    return {
      pending: pending.map((p) => ({ id: p.id, platform: p.platform, userId: p.userId, displayName: p.displayName, createdAt: p.createdAt, expiresAt: p.expiresAt })),
      paired,
    };
  });

  app.post('/v1/admin/agents/:namespace/:name/pairings/:code/:verb', optionalBody, async (request) => {
    const params = parseInput(decideParams, request.params, 'params');
    const agent = await agentOf(request, params);
    const body = parseInput(decideBody, request.body ?? {}, 'body');
    const decided = await decideAndNotify({ db, queues: ctx.deps.queues, log: request.log }, agent, {
      code: params.code, decision: params.verb, by: body.by ? `admin-api:${body.by}` : 'admin-api', now: now(), ...(body.platform ? { platform: body.platform } : {}),
    });
    if (!decided.ok) throw new HermesError(decided.reason === 'locked' ? 'HERMES_PAIRING_LOCKED' : 'HERMES_PAIRING_NOT_FOUND', decided.until ? `Locked until ${decided.until.toISOString()}.` : undefined);
    const r = decided.request;
    return { id: r.id, state: params.verb === 'approve' ? 'approved' : 'denied', platform: r.platform, userId: r.userId };
  });
}
