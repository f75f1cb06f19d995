// DM pairing at the gateway (issue 11 point 2): what an unknown user's DM gets — a code, one
// "still pending" reminder, or a polite refusal — recorded in one transaction with the pairing
// request and sent through the delivery ledger like any reply (never a model call). And the
// approval notice an approved user gets. The code is in the message and nowhere else: the
// pairing table keeps its hash, and nothing here logs it.
import type { FastifyBaseLogger } from 'fastify';
import {
  admitAnswered, admitAnsweredIn, decidePairing, enqueueDelivery, requestPairing, type AgentRecord, type Answered, type Db, type PairingAsk,
  type PairingDecision, type PendingPairing, type Queues, type TraceCarrier,
} from '../core/index.js';
import type { InboundEvent } from '../platforms/index.js';

const segment = (s: string) => s.replace(/%/g, '%25').replace(/:/g, '%3A');

export const pairingText = {
  code: (code: string, agent: string) =>
    `Hi! I don't know you yet. To get access, give this pairing code to the owner of this agent: ${code}\n` +
    `They approve it with \`hermes pairing approve ${agent} ${code}\`. The code expires in 1 hour.`,
  pending: 'Your pairing request is still waiting for the owner\'s approval; I\'ll be able to answer once they approve it. You can ask for a new code 10 minutes after the last one.',
  full: 'Sorry, too many people are waiting for pairing approval on this agent right now. Please try again in a while.',
  locked: 'Sorry, pairing with this agent is paused for now (too many wrong approval codes). Please try again in an hour.',
  approved: 'The owner approved your pairing request: you can talk to me now.',
} as const;

/** The reply for an ask, with its dedupe id (one message per request, per 10 min, per lock); none for silence. */
function answerOf(ask: PairingAsk, user: string, agent: string, now: Date): { text: string; eventId: string } | undefined {
  switch (ask.kind) {
    case 'code': return { text: pairingText.code(ask.code, agent), eventId: `pairing:${ask.requestId}` };
    case 'rate-limited': return ask.remind ? { text: pairingText.pending, eventId: `pairing-pending:${ask.requestId}` } : undefined;
    case 'full': return { text: pairingText.full, eventId: `pairing-full:${user}:${Math.floor(now.getTime() / 600_000)}` };
    case 'locked': return { text: pairingText.locked, eventId: `pairing-locked:${user}:${ask.until.getTime()}` };
  }
}

/**
 * What a request that must be answered at once (a Discord `/ask`) is told when the ledger sends it
 * nothing: a repeat the reminder already covered, or a refusal already sent (a duplicate).
 */
export function pairingNotice(ask: PairingAsk['kind']): string {
  return ask === 'full' ? pairingText.full : ask === 'locked' ? pairingText.locked : pairingText.pending;
}

export interface PairingAnswer {
  ask: PairingAsk['kind'];
  /** The admission recording the answer; absent when the user gets silence (a second repeat within 10 min). */
  answered?: Answered;
}

/** Records the DM's pairing request and its answer, in one transaction; the caller enqueues the delivery. */
export async function answerUnknownDm(db: Db, agent: AgentRecord, event: InboundEvent, now: Date, trace: TraceCarrier): Promise<PairingAnswer> {
  const { namespace, name } = agent.compiled.agent;
  return db.tx(async (sql) => {
    const ask = await requestPairing(sql, { agentId: agent.agentId, platform: event.platform, user: event.user, replyTarget: event.replyTarget, now });
    const answer = answerOf(ask, event.user.id, `${namespace}/${name}`, now);
    if (!answer) return { ask: ask.kind };
    const answered = await admitAnsweredIn(sql, {
      agentId: agent.agentId,
      platform: event.platform,
      sessionKey: `agent:${namespace}/${name}:${event.platform}:pairing:${segment(event.user.id)}`,
      user: { platformUserId: event.user.id },
      eventId: answer.eventId,
      content: '(not stored: a message from a user who is not paired yet)',
      replyTarget: event.replyTarget,
      traceContext: trace,
    }, answer.text);
    return { ask: ask.kind, answered };
  });
}

/** Tells an approved user they are in (through the ledger; `queues` absent: the sweeper sends it). */
export async function notifyApproved(deps: { db: Db; queues?: Queues; log?: FastifyBaseLogger }, agent: AgentRecord, request: PendingPairing): Promise<void> {
  const { namespace, name } = agent.compiled.agent;
  const answered = await admitAnswered(deps.db, {
    agentId: agent.agentId,
    platform: request.platform,
    sessionKey: `agent:${namespace}/${name}:${request.platform}:pairing:${segment(request.userId)}`,
    user: { platformUserId: request.userId },
    eventId: `pairing-approved:${request.id}`,
    content: '(pairing approved)',
    replyTarget: request.replyTarget,
  }, pairingText.approved);
  if (answered.obligationId && deps.queues) {
    await enqueueDelivery(deps.queues, { obligationId: answered.obligationId })
      .catch((err: unknown) => deps.log?.warn({ err, obligation: answered.obligationId }, 'Delivery enqueue failed; the sweeper will send the approval notice'));
  }
}

export interface OwnerDecision {
  code: string;
  decision: 'approve' | 'deny';
  /** Recorded as decided_by: `cli:<login>`, `admin-api[:by]`, `<platform>:<user>`. */
  by: string;
  platform?: string;
  now: Date;
}

/** An owner's approve/deny (CLI, admin API, chat): the decision, then the approval notice to the user. */
export async function decideAndNotify(deps: { db: Db; queues?: Queues; log?: FastifyBaseLogger }, agent: AgentRecord, d: OwnerDecision): Promise<PairingDecision> {
  const platforms = (agent.compiled.platforms ?? []).filter((p) => p.dmPairing).map((p) => p.type);
  const decided = await decidePairing(deps.db, { agentId: agent.agentId, platforms, ...d });
  if (decided.ok && d.decision === 'approve') await notifyApproved(deps, agent, decided.request);
  return decided;
}

/** What an owner is told about a decision that did not go through. */
export function decisionProblem(d: Extract<PairingDecision, { ok: false }>): string {
  return d.reason === 'locked'
    ? `Pairing is locked until ${d.until?.toISOString() ?? 'later'} after ${5} wrong codes; try again then.`
    : 'No pending pairing request has this code (codes expire after 1 hour). Wrong codes count: 5 lock pairing for an hour.';
}
