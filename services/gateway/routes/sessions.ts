// The caller's sessions on the API platform:
//   GET /v1/sessions                 newest first, paged (`limit` 1..100, default 20; `after` = the
//                                    last id of the previous page); `model` narrows to one agent;
//   GET /v1/sessions/{id}            one of them;
//   GET /v1/sessions/{id}/messages   its transcript (user and assistant lines, oldest first).
// "The caller's" is what `admittedBy` says (admission.ts), per agent: the sessions of the user the
// key speaks as (bound or its own), or every API session of the agent for a trusted backend;
// another caller's session is a 404.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  HermesError, getCallerSession, listCallerSessions, listMessages, type AgentRecord, type CallerSession,
} from '../../core/index.js';
import { admittedBy, apiUser } from '../admission.js';
import { keyBinding } from '../auth.js';
import { resolveAgent } from '../api-turns.js';
import { callerFrom, usableAgents, type Caller } from '../auth.js';
import type { GatewayContext } from '../context.js';
import { parseModel } from '../openai/request.js';
import { parseInput, singleLine } from '../validation.js';

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.uuid().optional(),
  model: singleLine.min(1).max(512).optional(),
});
const idParams = z.object({ id: singleLine.min(1).max(256) });

const seconds = (d: Date) => Math.floor(new Date(d).getTime() / 1000);

function sessionObject(s: CallerSession, agents: ReadonlyMap<string, string>) {
  return {
    id: s.id, object: 'hermes.session', model: agents.get(s.agentId) ?? null, key: s.key, state: s.state,
    created_at: seconds(s.createdAt), last_activity_at: seconds(s.lastActivityAt), message_count: s.messageCount,
  };
}

/** The agents (id → record) whose sessions the caller may list: `model`'s, else every one the key may use. */
async function callerAgents(ctx: GatewayContext, caller: Caller, model?: string): Promise<Map<string, AgentRecord>> {
  if (model !== undefined) {
    const agent = await resolveAgent(ctx, caller, model);
    return new Map([[agent.agentId, agent]]);
  }
  const out = new Map<string, AgentRecord>();
  for (const name of await usableAgents(ctx.deps.agents, caller)) {
    const { namespace, name: agentName } = parseModel(name);
    const agent: AgentRecord | undefined = await ctx.deps.agents.get(namespace, agentName);
    if (agent) out.set(agent.agentId, agent);
  }
  return out;
}

const names = (agents: ReadonlyMap<string, AgentRecord>) =>
  new Map([...agents].map(([id, a]) => [id, `${a.compiled.agent.namespace}/${a.compiled.agent.name}`]));

const isCallers = (s: CallerSession, agents: ReadonlyMap<string, AgentRecord>, caller: Caller) => {
  const agent = agents.get(s.agentId);
  return agent !== undefined && admittedBy({ platform: 'api', callerId: s.callerId }, agent, caller);
};

/** Per agent, the identity whose sessions the key lists (null: all of the agent's API sessions). */
const scopesOf = (agents: ReadonlyMap<string, AgentRecord>, caller: Caller) => [...agents.values()].map((agent) => ({
  agentId: agent.agentId,
  identity: keyBinding(agent, caller).kind === 'trusted-backend' ? null : apiUser(agent, caller).identity,
}));

async function ownedSession(ctx: GatewayContext, request: FastifyRequest) {
  const caller = callerFrom(request);
  const { id } = parseInput(idParams, request.params, 'params');
  const agents = await callerAgents(ctx, caller);
  const missing = () => new HermesError('HERMES_SESSION_NOT_FOUND', `"${id}" is not a session of this key.`);
  if (!z.uuid().safeParse(id).success) throw missing();
  const session = await getCallerSession(ctx.deps.db.pool, id);
  if (!session || !isCallers(session, agents, caller)) throw missing();
  return { session, agents };
}

export function registerSessionRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/v1/sessions', async (request) => {
    const caller = callerFrom(request);
    const query = parseInput(listQuery, request.query, 'query');
    const agents = await callerAgents(ctx, caller, query.model);
    // One more than asked: tells whether another page follows.
    const rows = await listCallerSessions(ctx.deps.db.pool, { scopes: scopesOf(agents, caller) }, { limit: query.limit + 1, ...(query.after ? { after: query.after } : {}) });
    const page = rows.slice(0, query.limit);
    const data = page.filter((s) => isCallers(s, agents, caller)).map((s) => sessionObject(s, names(agents)));
    return { object: 'list', data, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null, has_more: rows.length > query.limit };
  });

  app.get('/v1/sessions/:id', async (request) => {
    const { session, agents } = await ownedSession(ctx, request);
    return sessionObject(session, names(agents));
  });

  app.get('/v1/sessions/:id/messages', async (request) => {
    const { session } = await ownedSession(ctx, request);
    const transcript = await listMessages(ctx.deps.db.pool, session.id);
    const data = transcript
      .filter((m) => (m.role === 'user' || m.role === 'assistant') && m.content !== '')
      .map((m) => ({ object: 'hermes.session.message', seq: m.seq, role: m.role, content: m.content, created_at: seconds(m.createdAt) }));
    return { object: 'list', data };
  });
}
