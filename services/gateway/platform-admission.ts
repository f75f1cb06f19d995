// The platform-independent half of the adapter contract, after a request was verified and
// normalised: authorise → session key → durable admission → wake-up. The platform is acknowledged
// only after this returns (the admission, or the refusal, is committed); the model is never awaited.
import type { FastifyBaseLogger } from 'fastify';
import {
  admitAnswered, enqueueDelivery, pgId, pgText, hasSessionKey, isPaired, permissionsFor, type Answered, type AgentRecord, type TraceCarrier,
} from '../core/index.js';
import { allowedWithoutPairing, authorise, platformSessionKey, refusalText, type InboundEvent, type Normalised, type PlatformSettings } from '../platforms/index.js';
import { enqueueSoon } from './admission.js';
import { admitInbound } from './inbound.js';
import type { GatewayContext } from './context.js';
import { answerUnknownDm } from './pairing.js';

export type PlatformAdmission =
  | { outcome: 'admitted' | 'duplicate'; admissionId: string; sessionId: string }
  /** Not allowed: refused once per user (a polite reply through the ledger), never a model call. */
  | { outcome: 'refused' | 'refused-before'; admissionId: string }
  /** A text past HERMES_MAX_MESSAGE_CHARS: acknowledged, and answered once with the limit (never a model call). */
  | { outcome: 'too-long' | 'too-long-before'; admissionId: string }
  /**
   * An unknown DM on a platform with dmPairing: a code, one reminder, a polite refusal (full / locked), or silence.
   * `answering`: the ledger sends this event an answer; false for silence and for an answer already sent (a duplicate).
   */
  | { outcome: 'pairing'; ask: 'code' | 'rate-limited' | 'full' | 'locked'; admissionId?: string; answering: boolean };

const segment = (s: string) => s.replace(/%/g, '%25').replace(/:/g, '%3A');

/** An answer without the model, in a session of its own per user (`…:<platform>:<kind>:<user>`), the message itself not stored. */
async function answerApart(ctx: GatewayContext, agent: AgentRecord, event: InboundEvent, a: { kind: string; eventId: string; content: string; reply: string }, via: Via): Promise<Answered> {
  const { namespace, name } = agent.compiled.agent;
  const answered = await admitAnswered(ctx.deps.db, {
    agentId: agent.agentId,
    platform: event.platform,
    sessionKey: `agent:${namespace}/${name}:${event.platform}:${a.kind}:${segment(event.user.id)}`,
    user: { platformUserId: event.user.id },
    eventId: a.eventId,
    content: a.content,
    replyTarget: event.replyTarget,
    traceContext: via.trace,
  }, a.reply);
  await sendAnswer(ctx, answered, via.trace, via.log);
  return answered;
}

/**
 * Refusals live in their own session per user (`…:<platform>:refused:<user>`), never in the
 * conversation the user tried to open, and their dedupe id is per user: one refusal, however many
 * messages (and retries) follow. The message itself is not stored.
 */
async function refuse(ctx: GatewayContext, agent: AgentRecord, event: InboundEvent, via: Via): Promise<PlatformAdmission> {
  const answered = await answerApart(ctx, agent, event, {
    kind: 'refused', eventId: `refusal:${event.user.id}`, content: '(not stored: the sender is not allowed to use this agent)', reply: refusalText,
  }, via);
  return { outcome: answered.duplicate ? 'refused-before' : 'refused', admissionId: answered.admissionId };
}

/** The answer to a message past HERMES_MAX_MESSAGE_CHARS. */
const tooLongText = (chars: number, maxChars: number) =>
  `Your message has ${chars} characters; this agent takes at most ${maxChars}. Please shorten it or send it in parts.`;

/**
 * A text past HERMES_MAX_MESSAGE_CHARS is answered with the limit, in the user's chat, and the
 * platform is acknowledged: a 4xx made Slack and Teams send it again and the user heard nothing,
 * and the socket connectors and Telegram dropped it in silence. Like a refusal it lives in a
 * session of its own and is not stored; its dedupe id is the event's, so a retry is answered once.
 */
async function answerTooLong(ctx: GatewayContext, agent: AgentRecord, event: InboundEvent, via: Via): Promise<PlatformAdmission> {
  const maxChars = ctx.deps.config.HERMES_MAX_MESSAGE_CHARS;
  const answered = await answerApart(ctx, agent, event, {
    kind: 'too-long', eventId: `too-long:${event.eventId}`,
    content: `(not stored: ${event.text.length} characters, over HERMES_MAX_MESSAGE_CHARS ${maxChars})`, reply: tooLongText(event.text.length, maxChars),
  }, via);
  via.log.warn({ platform: event.platform, user: event.user.id, chars: event.text.length, maxChars }, 'Answered a message longer than HERMES_MAX_MESSAGE_CHARS with the limit');
  return { outcome: answered.duplicate ? 'too-long-before' : 'too-long', admissionId: answered.admissionId };
}

async function sendAnswer(ctx: GatewayContext, answered: Answered | undefined, trace: TraceCarrier, log: FastifyBaseLogger): Promise<void> {
  if (!answered?.obligationId) return;
  // A lost wake-up is found by the sweeper (pending obligations are re-enqueued).
  await enqueueDelivery(ctx.deps.queues, { obligationId: answered.obligationId, trace })
    .catch((err: unknown) => log.warn({ err, obligation: answered.obligationId }, 'Delivery enqueue failed; the sweeper will send the answer'));
}

/** An unknown user's DM on a platform with DM pairing: the pairing flow instead of the refusal. */
async function pairingAnswer(ctx: GatewayContext, agent: AgentRecord, event: InboundEvent, via: Via): Promise<PlatformAdmission> {
  const now = new Date(ctx.deps.tuning?.now?.() ?? Date.now());
  const { ask, answered } = await answerUnknownDm(ctx.deps.db, agent, event, now, via.trace);
  await sendAnswer(ctx, answered, via.trace, via.log);
  via.log.info({ platform: event.platform, user: event.user.id, ask }, 'Answered an unknown DM with DM pairing');
  return { outcome: 'pairing', ask, ...(answered ? { admissionId: answered.admissionId } : {}), answering: answered?.obligationId !== undefined };
}

/** SPEC's order; the pairing store is read only for users neither allow-all nor the allowlist let in. */
async function authorised(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, event: InboundEvent) {
  const paired = !allowedWithoutPairing(settings, event) && await isPaired(ctx.deps.db.pool, agent.agentId, event.platform, event.user.id);
  return authorise(settings, event, paired);
}

/** The request an event came in: its trace context and logger. */
export interface Via { trace: TraceCarrier; log: FastifyBaseLogger }

/** Whether a thread is already a session of ours (the bot took part in it). */
const threadIsOurs = (ctx: GatewayContext, agent: AgentRecord, event: InboundEvent) =>
  hasSessionKey(ctx.deps.db.pool, agent.agentId, platformSessionKey(agent.compiled.agent, event));

/**
 * A follow-up (a thread message that did not address us) is a turn only in a thread that is
 * already a session of ours, and only from someone the platform lets in: a person it does not
 * allow, talking in such a thread without writing to the bot, is ignored — not sent the refusal,
 * which would answer a message that was never addressed to us (each new person in the thread
 * drew one). Addressed to us (a mention, a DM) they still get the refusal or a pairing code.
 * Other kinds pass as they are.
 */
export async function settleFollowUp<N extends Normalised>(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, normalised: N): Promise<Exclude<N, { kind: 'follow-up' }> | Extract<Normalised, { kind: 'message' | 'ignore' }>> {
  if (normalised.kind !== 'follow-up') return normalised as Exclude<N, { kind: 'follow-up' }>;
  const { event } = normalised;
  if (!(await threadIsOurs(ctx, agent, event))) return { kind: 'ignore', reason: 'a thread message without a mention, in a thread we did not take part in' };
  if (!(await authorised(ctx, agent, settings, storableEvent(event))).allowed) return { kind: 'ignore', reason: 'a thread message without a mention, from someone the platform does not allow' };
  return { kind: 'message', event };
}

/**
 * What Postgres can store of a platform's event, before anything (pairing included) is read or
 * written: a NUL in an id is a 400; a display name and the message text are stored as text is
 * (U+FFFD) — the text before any command reads it, so `/kanban create` gets what it can store.
 */
function storableEvent(event: InboundEvent): InboundEvent {
  pgId('user id', event.user.id);
  pgId('chat id', event.chat.id);
  pgId('event id', event.eventId);
  const text = pgText(event.text);
  return { ...event, text, ...(event.user.name === undefined ? {} : { user: { ...event.user, name: pgText(event.user.name) } }) };
}

export async function admitPlatformEvent(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, received: InboundEvent, via: Via): Promise<PlatformAdmission> {
  const { trace, log } = via;
  const event = storableEvent(received);
  const agentLabel = `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;
  const auth = await authorised(ctx, agent, settings, event);
  if (!auth.allowed) {
    const refused = auth.pairing ? await pairingAnswer(ctx, agent, event, via) : await refuse(ctx, agent, event, via);
    ctx.deps.metrics.admissions.inc({ agent: agentLabel, outcome: refused.outcome });
    return refused;
  }
  if (event.text.length > ctx.deps.config.HERMES_MAX_MESSAGE_CHARS) {
    const tooLong = await answerTooLong(ctx, agent, event, via);
    ctx.deps.metrics.admissions.inc({ agent: agentLabel, outcome: tooLong.outcome });
    return tooLong;
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
  }, { ...via, perms: permissionsFor(agent.compiled, { platform: event.platform, userId: event.user.id, chatId: event.chat.id }) });
  ctx.deps.metrics.admissions.inc({ agent: agentLabel, outcome: admitted.queueFull !== undefined ? 'conversation_full' : admitted.duplicate ? 'duplicate' : 'admitted' });
  // A duplicate still queued may have lost its first enqueue; adding it again is idempotent.
  if (admitted.state === 'queued') await enqueueSoon(ctx, log, admitted, trace);
  return { outcome: admitted.duplicate ? 'duplicate' : 'admitted', admissionId: admitted.admissionId, sessionId: admitted.sessionId };
}
