// GET /v1/agents/:namespace/:name/admissions/:id — an admission's state and its reply. Only the
// key that admitted it may read it: another key (of the same agent or not) gets the same 404 as
// for an id that does not exist. `error` is a public reason (a catalogue code and message),
// never the internal text the ledger keeps for operators.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  HermesError, clarifyEventOf, errorCatalogue, getAdmissionStatus, getObligationForAdmission, pendingClarificationOf,
  type AdmissionProgress, type AdmissionStatus, type AgentRecord, type Clarification, type ErrorCode, type Obligation,
} from '../../core/index.js';
import { admittedBy } from '../admission.js';
import { authorizeAgent, callerFrom, type Caller } from '../auth.js';
import type { GatewayContext } from '../context.js';
import { agentParams, parseInput, singleLine } from '../validation.js';

export const admissionParams = agentParams.extend({ id: singleLine });

/** Why a turn did not answer, in words fit for any caller: null when it did. */
export function publicError(a: Pick<AdmissionProgress, 'state' | 'outcome'>): { code: ErrorCode; message: string } | null {
  const code: ErrorCode | undefined = a.state === 'unknown' ? 'HERMES_TURN_INTERRUPTED' : a.outcome === 'failed' ? 'HERMES_TURN_FAILED' : undefined;
  return code ? { code, message: errorCatalogue[code].message } : null;
}

export function admissionView(a: AdmissionStatus, reply: Obligation | undefined, asked?: Clarification) {
  return {
    id: a.id,
    sessionId: a.sessionId,
    state: a.state,
    outcome: a.outcome,
    error: publicError(a),
    createdAt: a.createdAt,
    startedAt: a.startedAt,
    finishedAt: a.finishedAt,
    // A turn cut by a shutdown (or its worker's fence) answers under the admission that resumes it.
    continuedBy: a.continuedBy,
    reply: reply ? { content: reply.content, delivery: { state: reply.state, attempts: reply.attempts } } : null,
    // The agent asked a clarify question and waits: the caller's next message is the answer.
    clarify: asked ? clarifyEventOf(asked) : null,
  };
}

export interface AdmissionTarget { agent: AgentRecord; caller: Caller; id: string; namespace: string; name: string }

/** The agent and the admission id named by the path, after auth; 404 unless the id is a uuid. */
export async function admissionTarget(ctx: GatewayContext, request: FastifyRequest): Promise<AdmissionTarget> {
  const caller = callerFrom(request);
  const { namespace, name, id } = parseInput(admissionParams, request.params, 'params');
  const agent = await authorizeAgent(ctx.deps.agents, caller, namespace, name);
  if (!z.uuid().safeParse(id).success) throw notFound(id, namespace, name);
  return { agent, caller, id, namespace, name };
}

/** The admission is the target's: of its agent, admitted with its key. */
export const belongsTo = (a: Pick<AdmissionStatus, 'agentId' | 'platform' | 'callerId'>, t: AdmissionTarget) =>
  a.agentId === t.agent.agentId && admittedBy(a, t.agent, t.caller);

export const notFound = (id: string, namespace: string, name: string) =>
  new HermesError('HERMES_ADMISSION_NOT_FOUND', `Agent "${namespace}/${name}" has no admission "${id}" readable with this key (a key reads its own user's admissions; a trusted backend every API user's).`);

export function registerAdmissionRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/v1/agents/:namespace/:name/admissions/:id', async (request) => {
    const target = await admissionTarget(ctx, request);
    const admission = await getAdmissionStatus(ctx.deps.db.pool, target.id);
    if (!admission || !belongsTo(admission, target)) throw notFound(target.id, target.namespace, target.name);
    const { pool } = ctx.deps.db;
    const asked = admission.state === 'started' ? await pendingClarificationOf(pool, target.id) : undefined;
    return admissionView(admission, await getObligationForAdmission(pool, target.id), asked);
  });
}
