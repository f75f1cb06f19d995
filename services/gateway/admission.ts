// Admitting an API-platform message: session key (ARCHITECTURE §7), dedupe id, the durable
// admission (committed before we answer), then the BullMQ wake-up, which may fail or stall
// without failing the request: the outbox sweeper re-enqueues queued admissions.
import type { FastifyBaseLogger } from 'fastify';
import {
  HermesError, enqueueTurn, permissionsFor,
  type AdmissionState, type AdmissionStatus, type AgentRecord, type CallerMessage, type TraceCarrier,
} from '../core/index.js';
import { keyBinding, type Caller } from './auth.js';
import { admitInbound, conversationFull } from './inbound.js';
import type { GatewayContext } from './context.js';

export interface ApiMessage {
  content: string;
  /** The user the request names (body `user.id`, OpenAI `user`); checked against the key's binding. */
  userId?: string;
  userName?: string;
  /** Sub-key selecting one of the user's conversations. */
  conversation?: string;
  /** Dedupe id (body `eventId` or the `Idempotency-Key` header), scoped to the API key. */
  eventId?: string;
  /** Another route's own dedupe namespace for `eventId` (see dedupeId). */
  scope?: DedupeScope;
  /** The identity of an existing turn the caller may read (`ownedApiTurn` checked it): act in its session, not as the caller. */
  actAs?: ApiUser;
  callerHistory?: CallerMessage[];
  /**
   * The caller waits for the turn's one reply and sees nothing else of it (a chat completion, with
   * or without X-Hermes-Session-Id): a question asked mid-turn would reach nobody while the request
   * hangs, so the turn is not offered clarify (reply target `{kind: 'api', replyOnly: true}`).
   */
  replyOnly?: boolean;
  trace: TraceCarrier;
}

/** Routes whose dedupe ids live apart from the message API's. */
export type DedupeScope = 'chat' | 'responses' | 'runs' | 'run-stop';

/**
 * The stored dedupe id of a caller's `eventId`: `<keyId>:<eventId>` for the message API (as
 * ever), `<scope>:<keyId>:<eventId>` for another route. A key id is 12 hex digits and no scope
 * word is, so a message's eventId can never name another route's admission (nor one route's id
 * another's), whatever characters it holds.
 */
export const dedupeId = (keyId: string, eventId: string, scope?: DedupeScope) => (scope ? `${scope}:${keyId}:${eventId}` : `${keyId}:${eventId}`);

export interface ApiAdmission {
  admissionId: string;
  sessionId: string;
  state: AdmissionState;
  duplicate: boolean;
}

/** Keeps caller-chosen segments from forging extra `:`-separated key parts. */
const segment = (s: string) => s.replace(/%/g, '%25').replace(/:/g, '%3A');

/** Who an API request speaks as: the stored identity (`users.platform_user_id`) and, for access rules, the user id. */
export interface ApiUser {
  /** `alice` (escaped: no `:`), or `k:<keyId>` for a key's own implicit user. */
  identity: string;
  /** As spec.admins and spec.access name API users: `api:<userId>`. */
  userId: string;
}

/**
 * The user a request acts as, by the key's binding (spec.api.keys):
 *   bound to `user`   → that user; naming another → 403;
 *   trusted backend   → the user it names (or its own implicit user when it names none);
 *   neither (default) → the key's own implicit user `k:<keyId>`; naming any user → 403.
 * Named users are agent-wide (a bound key and a backend naming the same user reach the same
 * sessions); escaped names hold no `:`, so none can equal an implicit `k:<keyId>` identity.
 */
export function apiUser(agent: AgentRecord, caller: Caller, requested?: string): ApiUser {
  const binding = keyBinding(agent, caller);
  const own = { identity: `k:${caller.keyId}`, userId: `k:${caller.keyId}` };
  if (binding.kind === 'trusted-backend') return requested === undefined ? own : { identity: segment(requested), userId: requested };
  if (binding.kind === 'user') {
    if (requested !== undefined && requested !== binding.user) throw new HermesError('HERMES_USER_NOT_ALLOWED', `This key is bound to one user and the request names "${requested}": leave the user out, or use a key marked trustedBackend: true in the Agent's spec.api.keys.`);
    return { identity: segment(binding.user), userId: binding.user };
  }
  if (requested !== undefined) throw new HermesError('HERMES_USER_NOT_ALLOWED', `This key speaks only for itself (its spec.api.keys entry sets neither user nor trustedBackend), so it may not name the user "${requested}": leave the user out, bind the key to a user, or mark it trustedBackend: true.`);
  return own;
}

/**
 * The identity an API turn was admitted as (its `callerId`), for continuing or stopping it in its
 * own session: a trusted backend acting on another key's turn reaches that turn's session, not a
 * session of its own with the same conversation name.
 */
export function turnUser(turn: { callerId: string | null; keyId: string }): ApiUser {
  const identity = turn.callerId ?? `k:${turn.keyId}`;
  if (identity.startsWith('k:')) return { identity, userId: identity };
  return { identity, userId: identity.replace(/%3A/g, ':').replace(/%25/g, '%') };
}

/** `agent:<ns>/<name>:api:dm:<identity>[:<conversation>]`. */
export function apiSessionKey(agent: AgentRecord, user: ApiUser, conversation?: string): string {
  const { namespace, name } = agent.compiled.agent;
  return `agent:${namespace}/${name}:api:dm:${user.identity}${conversation === undefined ? '' : `:${segment(conversation)}`}`;
}

/**
 * True when `caller` may read the admission: an API admission of the key's own user (a bound
 * key: any key bound to that user), or any API admission for a trusted backend.
 */
export function admittedBy(admission: Pick<AdmissionStatus, 'platform' | 'callerId'>, agent: AgentRecord, caller: Caller): boolean {
  if (admission.platform !== 'api' || admission.callerId === null) return false;
  if (keyBinding(agent, caller).kind === 'trusted-backend') return true;
  return admission.callerId === apiUser(agent, caller).identity;
}

export async function admitApiMessage(ctx: GatewayContext, agent: AgentRecord, caller: Caller, msg: ApiMessage, log: FastifyBaseLogger): Promise<ApiAdmission> {
  // Before anything is written: a user this key may not name is a 403.
  const user = msg.actAs ?? apiUser(agent, caller, msg.userId);
  const perms = permissionsFor(agent.compiled, { platform: 'api', userId: user.userId });
  const admitted = await admitInbound(ctx, agent, {
    agentId: agent.agentId,
    platform: 'api',
    sessionKey: apiSessionKey(agent, user, msg.conversation),
    user: { platformUserId: user.identity, ...(msg.userName ? { displayName: msg.userName } : {}) },
    ...(msg.eventId !== undefined ? { eventId: dedupeId(caller.keyId, msg.eventId, msg.scope) } : {}),
    content: msg.content,
    ...(msg.callerHistory ? { callerHistory: msg.callerHistory } : {}),
    replyTarget: { kind: 'api', ...(msg.replyOnly ? { replyOnly: true } : {}) },
    traceContext: msg.trace,
  }, { trace: msg.trace, log, perms });
  const agentLabel = `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;
  ctx.deps.metrics.admissions.inc({ agent: agentLabel, outcome: admitted.queueFull !== undefined ? 'conversation_full' : admitted.duplicate ? 'duplicate' : 'admitted' });
  // Kept in the ledger as answered; the caller is told at once (a retry with its eventId reads that answer).
  if (admitted.queueFull !== undefined) throw conversationFull(admitted.queueFull);
  return admitted;
}

/**
 * Adds the turn job, waiting at most `timeoutMs`. Never throws: a failed or slow enqueue is
 * logged and left to the outbox sweeper (the job id is the admission id, so a late add is harmless).
 */
export async function enqueueSoon(ctx: GatewayContext, log: FastifyBaseLogger, admitted: { admissionId: string; sessionId: string }, trace: TraceCarrier): Promise<boolean> {
  const { admissionId, sessionId } = admitted;
  const timeoutMs = ctx.deps.tuning?.enqueueTimeoutMs ?? 1_000;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => {
      log.warn({ admissionId }, `Enqueue took over ${timeoutMs} ms; answered without it (the outbox sweeper re-enqueues queued admissions)`);
      resolve(false);
    }, timeoutMs);
  });
  const added = enqueueTurn(ctx.deps.queues, { admissionId, sessionId, trace }).then(() => true, (err: unknown) => {
    log.warn({ err, admissionId }, 'Enqueue failed; the outbox sweeper will re-enqueue the admission');
    return false;
  });
  try {
    return await Promise.race([added, late]);
  } finally {
    clearTimeout(timer);
  }
}
