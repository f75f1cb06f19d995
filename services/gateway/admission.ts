// Admitting an API-platform message: session key (ARCHITECTURE §7), dedupe id, the durable
// admission (committed before we answer), then the BullMQ wake-up, which may fail or stall
// without failing the request: the outbox sweeper re-enqueues queued admissions.
import type { FastifyBaseLogger } from 'fastify';
import {
  admit, decideApproval, enqueueTurn, parseApprovalCommand, getAdmissionStatus, parseControlCommand, publishSignal, recordSignal,
  type Admitted, type AdmissionState, type AdmissionStatus, type AgentRecord, type CallerMessage, type TraceCarrier,
} from '../core/index.js';
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

export async function admitApiMessage(ctx: GatewayContext, agent: AgentRecord, caller: Caller, msg: ApiMessage): Promise<ApiAdmission> {
  const { db } = ctx.deps;
  const admitted = await admit(db, {
    agentId: agent.agentId,
    platform: 'api',
    sessionKey: apiSessionKey(agent, caller, msg.userId, msg.conversation),
    user: { platformUserId: callerIdentity(caller, msg.userId), ...(msg.userName ? { displayName: msg.userName } : {}) },
    ...(msg.eventId !== undefined ? { eventId: `${caller.keyId}:${msg.eventId}` } : {}),
    content: msg.content,
    ...(msg.callerHistory ? { callerHistory: msg.callerHistory } : {}),
    replyTarget: { kind: 'api' },
    traceContext: msg.trace,
  });
  const agentLabel = `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;
  ctx.deps.metrics.admissions.inc({ agent: agentLabel, outcome: admitted.duplicate ? 'duplicate' : 'admitted' });
  if (!admitted.duplicate) await signalRunningTurn(ctx, admitted, msg.content);
  if (!admitted.duplicate) await recordApprovalDecision(ctx, admitted, msg.content);
  const state = admitted.duplicate ? (await getAdmissionStatus(db.pool, admitted.admissionId))?.state ?? 'queued' : 'queued';
  return { admissionId: admitted.admissionId, sessionId: admitted.sessionId, state, duplicate: admitted.duplicate };
}

/**
 * `/stop`, `/steer …`, `/redirect …` also reach the session's running turn out of band: a signal
 * row (Postgres) and a pub/sub announcement. The admission itself stays durable and gets a reply.
 * A failed announcement only costs latency for steer/redirect; it is logged, never fatal.
 */
export async function signalRunningTurn(ctx: GatewayContext, admitted: Admitted, content: string): Promise<void> {
  const command = parseControlCommand(content);
  if (!command) return;
  const signal = await recordSignal(ctx.deps.db.pool, { sessionId: admitted.sessionId, admissionId: admitted.admissionId, ...command });
  await publishSignal(ctx.deps.redis, ctx.deps.config.HERMES_QUEUE_PREFIX, signal)
    .catch((err: unknown) => ctx.deps.log.warn({ err, session: admitted.sessionId }, 'Control signal publish failed'));
}

/**
 * `/approve` and `/deny [reason]` get through while a turn runs (SPEC): the decision is recorded
 * now, for the session's oldest pending approval of this same user, and the waiting guard reads
 * it; the admission itself is answered after that turn, without the model.
 */
export async function recordApprovalDecision(ctx: GatewayContext, admitted: Admitted, content: string): Promise<void> {
  const command = parseApprovalCommand(content);
  if (!command) return;
  const decided = await decideApproval(ctx.deps.db.pool, { decidingAdmissionId: admitted.admissionId, ...command });
  ctx.deps.log.info({ session: admitted.sessionId, admissionId: admitted.admissionId, approval: decided?.id, decision: command.decision }, decided ? 'Recorded an approval decision' : 'An approval command found nothing waiting');
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
