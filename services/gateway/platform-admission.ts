// The platform-independent half of the adapter contract, after a request was verified and
// normalised: authorise → session key → durable admission → wake-up. The platform is acknowledged
// only after this returns (the admission, or the refusal, is committed); the model is never awaited.
import type { FastifyBaseLogger } from 'fastify';
import { admitAnswered, enqueueDelivery, hasSessionKey, type AgentRecord, type TraceCarrier } from '../core/index.js';
import { authorise, platformSessionKey, refusalText, type InboundEvent, type PlatformSettings } from '../platforms/index.js';
import { enqueueSoon } from './admission.js';
import { admitInbound } from './inbound.js';
import type { GatewayContext } from './context.js';

export type PlatformAdmission =
  | { outcome: 'admitted' | 'duplicate'; admissionId: string; sessionId: string }
  /** Not allowed: refused once per user (a polite reply through the ledger), never a model call. */
  | { outcome: 'refused' | 'refused-before'; admissionId: string };

const segment = (s: string) => s.replace(/%/g, '%25').replace(/:/g, '%3A');

/**
 * Refusals live in their own session per user (`…:<platform>:refused:<user>`), never in the
 * conversation the user tried to open, and their dedupe id is per user: one refusal, however many
 * messages (and retries) follow. The message itself is not stored.
 */
async function refuse(ctx: GatewayContext, agent: AgentRecord, event: InboundEvent, trace: TraceCarrier, log: FastifyBaseLogger): Promise<PlatformAdmission> {
  const { namespace, name } = agent.compiled.agent;
  const answered = await admitAnswered(ctx.deps.db, {
    agentId: agent.agentId,
    platform: event.platform,
    sessionKey: `agent:${namespace}/${name}:${event.platform}:refused:${segment(event.user.id)}`,
    user: { platformUserId: event.user.id },
    eventId: `refusal:${event.user.id}`,
    content: '(not stored: the sender is not allowed to use this agent)',
    replyTarget: event.replyTarget,
    traceContext: trace,
  }, refusalText);
  if (answered.obligationId) {
    // A lost wake-up is found by the sweeper (pending obligations are re-enqueued).
    await enqueueDelivery(ctx.deps.queues, { obligationId: answered.obligationId, trace })
      .catch((err: unknown) => log.warn({ err, obligation: answered.obligationId }, 'Delivery enqueue failed; the sweeper will send the refusal'));
  }
  return { outcome: answered.duplicate ? 'refused-before' : 'refused', admissionId: answered.admissionId };
}

/** The request an event came in: its trace context and logger. */
export interface Via { trace: TraceCarrier; log: FastifyBaseLogger }

/** A follow-up (a thread message that did not address us) is a turn only in a thread that is already a session of ours. */
export const threadIsOurs = (ctx: GatewayContext, agent: AgentRecord, event: InboundEvent) =>
  hasSessionKey(ctx.deps.db.pool, agent.agentId, platformSessionKey(agent.compiled.agent, event));

export async function admitPlatformEvent(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, event: InboundEvent, via: Via): Promise<PlatformAdmission> {
  const { trace, log } = via;
  const agentLabel = `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;
  const auth = authorise(settings, event);
  // Seam for DM pairing (issue 11 point 2): `auth.pairing` marks a DM that would get a pairing code.
  if (!auth.allowed) {
    const refused = await refuse(ctx, agent, event, trace, log);
    ctx.deps.metrics.admissions.inc({ agent: agentLabel, outcome: refused.outcome });
    return refused;
  }
  const admitted = await admitInbound(ctx, agent, {
    agentId: agent.agentId,
    platform: event.platform,
    sessionKey: platformSessionKey(agent.compiled.agent, event),
    user: { platformUserId: event.user.id, ...(event.user.name ? { displayName: event.user.name } : {}) },
    eventId: event.eventId,
    content: event.text,
    replyTarget: event.replyTarget,
    traceContext: trace,
  }, via);
  ctx.deps.metrics.admissions.inc({ agent: agentLabel, outcome: admitted.duplicate ? 'duplicate' : 'admitted' });
  // A duplicate still queued may have lost its first enqueue; adding it again is idempotent.
  if (admitted.state === 'queued') await enqueueSoon(ctx, log, admitted, trace);
  return { outcome: admitted.duplicate ? 'duplicate' : 'admitted', admissionId: admitted.admissionId, sessionId: admitted.sessionId };
}
