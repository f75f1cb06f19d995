// Turns started through the API's own resources (`/v1/responses`, `/v1/runs`): which agent a
// request means, who owns a stored id, and starting a turn with Idempotency-Key semantics:
//   same key + same request → the same id and admission, nothing admitted twice (also when two
//   such requests race: the admission's dedupe row and the api_turns unique key settle it);
//   same key + a different request → 409, nothing written.
// The admission and its api_turns row commit in one transaction; the BullMQ wake-up follows.
// Ownership goes through admission.ts (`apiUser`, `apiSessionKey`, `admittedBy`), so a
// change to what a key may see there applies here too.
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import {
  HermesError, admitIn, permissionsFor, apiTurnByIdempotencyKey, getAdmissionStatus, getApiTurn, insertApiTurn,
  type AgentRecord, type ApiTurn, type ApiTurnKind, type CallerMessage, type ErrorCode, type TraceCarrier,
} from '../core/index.js';
import { admittedBy, apiSessionKey, apiUser, dedupeId, enqueueSoon, turnUser, type ApiUser } from './admission.js';
import { conversationFull, recordApprovalDecision, recordClarifyAnswer, signalRunningTurn } from './inbound.js';
import { agentName, authorizeAgent, usableAgents, type Caller } from './auth.js';
import type { GatewayContext } from './context.js';
import { parseModel } from './openai/request.js';

/** `resp_<32 hex>` / `run_<32 hex>`: unguessable, and not the admission id (which stays internal). */
export const newApiTurnId = (kind: ApiTurnKind) => `${kind === 'response' ? 'resp' : 'run'}_${randomBytes(16).toString('hex')}`;

/**
 * The agent a request means: `model` (`<namespace>/<agent>` or `<agent>`), else the only agent
 * the key may use. Unknown or not this key's → the same 404 as every other route.
 */
export async function resolveAgent(ctx: GatewayContext, caller: Caller, model: string | undefined): Promise<AgentRecord> {
  if (model !== undefined) {
    const { namespace, name } = parseModel(model);
    return authorizeAgent(ctx.deps.agents, caller, namespace, name);
  }
  const usable = [...(await usableAgents(ctx.deps.agents, caller))];
  if (usable.length !== 1) throw new HermesError('HERMES_BAD_REQUEST', `body.model: this key may use ${usable.length} agents; name one as "<namespace>/<agent>" (see GET /v1/models).`);
  const { namespace, name } = parseModel(usable[0]!);
  return authorizeAgent(ctx.deps.agents, caller, namespace, name);
}

/** Deeper than this, a request body is refused: no request of these APIs nests near it, and the walk below recurses. */
const MAX_DEPTH = 64;

/** JSON with object keys sorted at every level: equal requests hash equally whatever their key order. */
function canonical(v: unknown, depth = 0): string {
  if (depth > MAX_DEPTH) throw new HermesError('HERMES_BAD_REQUEST', `body: nested more than ${MAX_DEPTH} levels deep.`);
  if (Array.isArray(v)) return `[${v.map((x) => canonical(x, depth + 1)).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x, depth + 1)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** What an Idempotency-Key replay must match: the route's kind and the request as sent. */
export const requestHash = (kind: ApiTurnKind, request: unknown) => createHash('sha256').update(canonical({ kind, request })).digest('hex');

const notFoundCode: Record<ApiTurnKind, ErrorCode> = { response: 'HERMES_RESPONSE_NOT_FOUND', run: 'HERMES_RUN_NOT_FOUND' };

/**
 * The stored turn `id` of `kind` when `caller` may see it: admitted by the caller's identity (as
 * `admittedBy` decides), of an agent the key may still use, not deleted. Anything else — another
 * key's id, another user's under a user-bound key, a malformed id — is the same 404.
 */
export async function ownedApiTurn(ctx: GatewayContext, caller: Caller, kind: ApiTurnKind, id: string): Promise<{ turn: ApiTurn; agent: AgentRecord }> {
  const missing = () => new HermesError(notFoundCode[kind], `"${id}" is not a ${kind} id made with this key.`);
  if (!/^(resp|run)_[0-9a-f]{32}$/.test(id)) throw missing();
  const turn = await getApiTurn(ctx.deps.db.pool, id);
  if (!turn || turn.kind !== kind || turn.deletedAt !== null) throw missing();
  const { namespace, name } = parseModel(turn.model);
  const agent = await authorizeAgent(ctx.deps.agents, caller, namespace, name).catch((err: unknown) => {
    if (err instanceof HermesError && (err.code === 'HERMES_AGENT_NOT_FOUND')) throw missing();
    throw err;
  });
  if (agent.agentId !== turn.agentId || !admittedBy(turn, agent, caller)) throw missing();
  return { turn, agent };
}

/**
 * What continuing the caller's stored response `previousId` means: its agent, conversation, user and
 * identity (so the new turn joins that turn's session, whoever of those allowed to continue it
 * asks). `model` and `user`, when sent, must agree with it.
 */
export async function continueTurn(ctx: GatewayContext, caller: Caller, previousId: string, sent: { model?: string | undefined; user?: string | undefined }): Promise<{ agent: AgentRecord; turn: ApiTurn; actAs: ApiUser }> {
  const { turn, agent } = await ownedApiTurn(ctx, caller, 'response', previousId);
  if (!turn.store) throw new HermesError('HERMES_RESPONSE_NOT_FOUND', `"${turn.id}" was created with store: false and cannot be continued.`);
  if (sent.model !== undefined && (await resolveAgent(ctx, caller, sent.model)).agentId !== agent.agentId) {
    throw new HermesError('HERMES_BAD_REQUEST', `body.model: previous_response_id "${turn.id}" belongs to model "${turn.model}".`);
  }
  if (sent.user !== undefined && sent.user !== (turn.apiUser ?? undefined)) {
    throw new HermesError('HERMES_BAD_REQUEST', `body.user: previous_response_id "${turn.id}" belongs to another user.`);
  }
  return { agent, turn, actAs: turnUser(turn) };
}

export interface ApiTurnSpec {
  kind: ApiTurnKind;
  agent: AgentRecord;
  caller: Caller;
  content: string;
  /** Caller-chosen user id (body `user`): the session key's user, as on the message API. */
  apiUser?: string;
  /** The identity of the turn this one continues (continueTurn): its session's, not the caller's. */
  actAs?: ApiUser;
  /** The session key's conversation sub-key. */
  conversation: string;
  callerHistory?: CallerMessage[];
  previousId?: string;
  instructions?: string;
  store: boolean;
  metadata?: Record<string, string>;
  idempotencyKey?: string;
  requestHash: string;
  trace: TraceCarrier;
}

export interface StartedApiTurn {
  turn: ApiTurn;
  /** True when an earlier request with the same Idempotency-Key made it (nothing new was admitted). */
  replayed: boolean;
  /** The admission is still queued (the caller enqueues it). */
  queued: boolean;
}

/**
 * The earlier turn of this Idempotency-Key, if any; 409 when it was made by a different request,
 * 404 when it was deleted since (a replay reads it, and a deleted response is not read).
 */
export async function replayOf(ctx: GatewayContext, caller: Caller, kind: ApiTurnKind, key: string | undefined, hash: string): Promise<ApiTurn | undefined> {
  if (key === undefined) return undefined;
  const earlier = await apiTurnByIdempotencyKey(ctx.deps.db.pool, caller.keyId, kind, key);
  if (!earlier) return undefined;
  if (earlier.requestHash !== hash) throw conflict(key);
  if (earlier.deletedAt) throw new HermesError(notFoundCode[kind], `Idempotency-Key "${key}" made "${earlier.id}", which has been deleted.`);
  // Read as any id is: the key must still reach its agent.
  return (await ownedApiTurn(ctx, caller, kind, earlier.id)).turn;
}

const conflict = (key: string) => new HermesError('HERMES_IDEMPOTENCY_CONFLICT', `Idempotency-Key "${key}" names an earlier request with a different body.`);

/** Refused after its admission read a duplicate of a different request: rolls the transaction back. */
class Conflict extends Error {
  constructor(readonly turn: ApiTurn) { super('idempotency conflict'); }
}

/**
 * Admits the turn and records its public id in one transaction (or finds the earlier turn of the
 * same Idempotency-Key), then, for a new admission, does what the message API does after
 * admitting: metrics, control commands (`/stop` …) reach the running turn, approvals are recorded.
 */
export async function startApiTurn(ctx: GatewayContext, log: FastifyBaseLogger, s: ApiTurnSpec): Promise<StartedApiTurn> {
  const earlier = await replayOf(ctx, s.caller, s.kind, s.idempotencyKey, s.requestHash);
  if (earlier) return replayed(ctx, earlier);
  const id = newApiTurnId(s.kind);
  // Before anything is written: a user this key may not name is a 403.
  const user = s.actAs ?? apiUser(s.agent, s.caller, s.apiUser);
  let result: { turn: ApiTurn; inserted: boolean; duplicate: boolean; clarifyWaiting?: boolean };
  try {
    result = await ctx.deps.db.tx(async (sql) => {
      const admitted = await admitIn(sql, {
        agentId: s.agent.agentId,
        platform: 'api',
        sessionKey: apiSessionKey(s.agent, user, s.conversation),
        user: { platformUserId: user.identity },
        // Scoped to the key and the route, apart from the message API's eventIds.
        ...(s.idempotencyKey !== undefined ? { eventId: dedupeId(s.caller.keyId, s.idempotencyKey, s.kind === 'response' ? 'responses' : 'runs') } : {}),
        content: s.content,
        ...(s.callerHistory?.length ? { callerHistory: s.callerHistory } : {}),
        replyTarget: { kind: 'api' },
        traceContext: s.trace,
      });
      // A full conversation: nothing is stored (the transaction rolls back) and the caller gets a 429.
      const waiting = admitted.queuedAhead ?? 0;
      if (!admitted.duplicate && waiting >= ctx.deps.config.HERMES_MAX_QUEUED_PER_SESSION) throw conversationFull(waiting);
      const row = await insertApiTurn(sql, {
        id, kind: s.kind, agentId: s.agent.agentId, admissionId: admitted.admissionId, keyId: s.caller.keyId, conversation: s.conversation,
        requestHash: s.requestHash, model: agentName(s.agent), store: s.store,
        ...(s.apiUser !== undefined ? { apiUser: s.apiUser } : {}),
        ...(s.previousId !== undefined ? { previousId: s.previousId } : {}),
        ...(s.idempotencyKey !== undefined ? { idempotencyKey: s.idempotencyKey } : {}),
        ...(s.instructions !== undefined ? { instructions: s.instructions } : {}),
        ...(s.metadata !== undefined ? { metadata: s.metadata } : {}),
      });
      if (row.turn.requestHash !== s.requestHash) throw new Conflict(row.turn);
      return { ...row, duplicate: admitted.duplicate, ...(admitted.clarifyWaiting !== undefined ? { clarifyWaiting: admitted.clarifyWaiting } : {}) };
    });
  } catch (err) {
    if (err instanceof Conflict) throw conflict(s.idempotencyKey ?? '');
    throw err;
  }
  // A racing request with the same key got there first: answer its turn.
  if (!result.inserted || result.duplicate) return replayed(ctx, result.turn);
  const admitted = { admissionId: result.turn.admissionId, sessionId: result.turn.sessionId, userId: '', duplicate: false, ...(result.clarifyWaiting !== undefined ? { clarifyWaiting: result.clarifyWaiting } : {}) };
  ctx.deps.metrics.admissions.inc({ agent: agentName(s.agent), outcome: 'admitted' });
  const perms = permissionsFor(s.agent.compiled, { platform: 'api', userId: user.userId });
  await signalRunningTurn(ctx, admitted, s.content, perms);
  await recordApprovalDecision(ctx, s.agent, admitted, s.content, perms);
  // A plain message on a stored conversation may answer a waiting clarify question.
  if (!s.callerHistory?.some((m) => m.role !== 'system') && !s.content.trimStart().startsWith('/')) await recordClarifyAnswer(ctx, admitted, s.content);
  log.info({ agent: agentName(s.agent), id: result.turn.id, admissionId: admitted.admissionId, sessionId: admitted.sessionId }, `Admitted ${s.kind}`);
  return { turn: result.turn, replayed: false, queued: true };
}

/** An Idempotency-Key replay of `turn` (replayOf found it): nothing is admitted. */
export async function replayed(ctx: GatewayContext, turn: ApiTurn): Promise<StartedApiTurn> {
  const status = await getAdmissionStatus(ctx.deps.db.pool, turn.admissionId);
  ctx.deps.metrics.admissions.inc({ agent: turn.model, outcome: 'duplicate' });
  return { turn, replayed: true, queued: status?.state === 'queued' };
}

/** Adds the turn's job when it is still queued (a replay of a queued turn may have lost its first enqueue; adding again is harmless). */
export async function enqueueStarted(ctx: GatewayContext, log: FastifyBaseLogger, started: StartedApiTurn, trace: TraceCarrier): Promise<void> {
  if (started.queued) await enqueueSoon(ctx, log, { admissionId: started.turn.admissionId, sessionId: started.turn.sessionId }, trace);
}
