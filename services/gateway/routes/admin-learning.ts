// The admin API for write approval (issue 12 point 6), beside `/memory …` and `/skills …` in chat
// and `hermes review`: list an agent's staged memory or skill writes with their diffs, and approve
// or reject one. Served only when HERMES_ADMIN_TOKEN is set, and only to requests bearing it
// (compared in constant time); without it the routes do not exist (404). Decisions are recorded
// as `admin-api` (plus the `by` the caller names).
//   GET  /v1/admin/agents/:namespace/:name/learning/:kind            kind = memory | skills
//   POST /v1/admin/agents/:namespace/:name/learning/:kind/:id/approve|reject   { "by"?: string }
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { HermesError, bearerMatches, findAgent, type AgentRecord } from '../../core/index.js';
import { decideStagedWrite, pgStaging, type StagedKind, type StagedWrite } from '../../agent/index.js';
import type { GatewayContext } from '../context.js';
import { agentParams, optionalBody, parseInput, singleLine } from '../validation.js';

const kindParams = agentParams.extend({ kind: z.enum(['memory', 'skills']) });
const writeParams = kindParams.extend({ id: z.string().uuid(), verb: z.enum(['approve', 'reject']) });
const decideBody = z.object({ by: singleLine.max(200).optional() }).strict();

const kindOf = (k: 'memory' | 'skills'): StagedKind => (k === 'memory' ? 'memory' : 'skill');

function view(w: StagedWrite) {
  return {
    id: w.id, kind: w.kind === 'memory' ? 'memory' : 'skills', target: w.target, userId: w.userId, person: w.person, diff: w.diff, contentHash: w.contentHash,
    state: w.state, sourceSessionId: w.sourceSessionId, createdAt: w.createdAt, decidedBy: w.decidedBy, decidedAt: w.decidedAt, result: w.result,
  };
}

export function registerAdminLearningRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const token = ctx.deps.config.HERMES_ADMIN_TOKEN;
  if (!token) return;
  const { db } = ctx.deps;
  const agentOf = async (request: FastifyRequest, params: { namespace: string; name: string }): Promise<AgentRecord> => {
    if (!bearerMatches(request.headers.authorization, token)) throw new HermesError('HERMES_ADMIN_UNAUTHENTICATED');
    const agent = await findAgent(db.pool, params.namespace, params.name);
    if (!agent) throw new HermesError('HERMES_AGENT_NOT_FOUND');
    return agent;
  };

  app.get('/v1/admin/agents/:namespace/:name/learning/:kind', async (request) => {
    const params = parseInput(kindParams, request.params, 'params');
    const agent = await agentOf(request, params);
    return { writes: (await pgStaging(db).pending(agent.agentId, kindOf(params.kind))).map(view) };
  });

  app.post('/v1/admin/agents/:namespace/:name/learning/:kind/:id/:verb', optionalBody, async (request) => {
    const params = parseInput(writeParams, request.params, 'params');
    const agent = await agentOf(request, params);
    const body = parseInput(decideBody, request.body ?? {}, 'body');
    const write = await pgStaging(db).find(agent.agentId, kindOf(params.kind), params.id);
    if (!write || write === 'ambiguous') throw new HermesError('HERMES_LEARNING_WRITE_NOT_FOUND');
    const decision = await decideStagedWrite(db, agent.compiled, write, params.verb, { by: body.by ? `admin-api:${body.by}` : 'admin-api' });
    if (!decision.done) throw new HermesError('HERMES_LEARNING_WRITE_DECIDED', decision.reason);
    return { id: write.id, state: decision.state, result: decision.result };
  });
}
