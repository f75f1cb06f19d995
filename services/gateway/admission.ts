// Admitting an API-platform message: session key (ARCHITECTURE §7), dedupe id, the durable
// admission (committed before we answer), then the BullMQ wake-up, which may fail or stall
// without failing the request: the outbox sweeper re-enqueues queued admissions.
import type { FastifyBaseLogger } from 'fastify';
import { enqueueTurn, type AdmissionState, type AdmissionStatus, type AgentRecord, type CallerMessage, type TraceCarrier } from '../core/index.js';
import { admitInbound } from './inbound.js';
import type { Caller } from './auth.js';
import type { GatewayContext } from './context.js';

export interface ApiMessage {
  content: string;
  /** Caller-chosen user id, within the key's own identity; defaults to the key itself. */
  userId?: string;
  userName?: string;
  /** Sub-key selecting one of the user's conversations. */
  conversation?: string;
  /** Dedupe id (body `eventId` or the `Idempotency-Key` header), scoped to the API key. */
  eventId?: string;
  callerHistory?: CallerMessage[];
  trace: TraceCarrier;
}

export interface ApiAdmission {
  admissionId: string;
  sessionId: string;
  state: AdmissionState;
  duplicate: boolean;
}

/** Keeps caller-chosen segments from forging extra `:`-separated key parts. */
const segment = (s: string) => s.replace(/%/g, '%25').replace(/:/g, '%3A');

/**
 * Who is speaking on the API platform, as stored in `users.platform_user_id`: every identity lives
 * under its key, so keys are isolation boundaries. The key itself is `k:<keyId>`; a caller-chosen
 * user id is `k:<keyId>:u:<id>`, the id escaped like every caller-chosen part. The two encodings
 * have different numbers of `:` parts, and escaped parts hold no `:`, so no choice of user id or
 * conversation by one key can produce another key's identity or session key.
 */
export function callerIdentity(caller: Caller, userId?: string): string {
  return userId === undefined ? `k:${caller.keyId}` : `k:${caller.keyId}:u:${segment(userId)}`;
}

/** `agent:<ns>/<name>:api:dm:<caller identity>[:<conversation>]`. */
export function apiSessionKey(agent: AgentRecord, caller: Caller, userId?: string, conversation?: string): string {
  const { namespace, name } = agent.compiled.agent;
  return `agent:${namespace}/${name}:api:dm:${callerIdentity(caller, userId)}${conversation === undefined ? '' : `:${segment(conversation)}`}`;
}

/** True when the admission was made with `caller`'s key (under any of its user ids). */
export function admittedBy(admission: Pick<AdmissionStatus, 'platform' | 'callerId'>, caller: Caller): boolean {
  const own = callerIdentity(caller);
  return admission.platform === 'api' && admission.callerId !== null && (admission.callerId === own || admission.callerId.startsWith(`${own}:`));
}

export async function admitApiMessage(ctx: GatewayContext, agent: AgentRecord, caller: Caller, msg: ApiMessage, log: FastifyBaseLogger): Promise<ApiAdmission> {
  const admitted = await admitInbound(ctx, agent, {
    agentId: agent.agentId,
    platform: 'api',
    sessionKey: apiSessionKey(agent, caller, msg.userId, msg.conversation),
    user: { platformUserId: callerIdentity(caller, msg.userId), ...(msg.userName ? { displayName: msg.userName } : {}) },
    ...(msg.eventId !== undefined ? { eventId: `${caller.keyId}:${msg.eventId}` } : {}),
    content: msg.content,
    ...(msg.callerHistory ? { callerHistory: msg.callerHistory } : {}),
    replyTarget: { kind: 'api' },
    traceContext: msg.trace,
  }, { trace: msg.trace, log });
  const agentLabel = `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;
  ctx.deps.metrics.admissions.inc({ agent: agentLabel, outcome: admitted.duplicate ? 'duplicate' : 'admitted' });
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
