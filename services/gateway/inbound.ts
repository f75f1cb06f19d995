// One authorised inbound message, from any platform (the message API, the OpenAI endpoint, chat
// platforms), in SPEC's handling order: emergency-stop gate → slash commands answered out of band
// → durable admission → control signals and approval decisions → the agent's busy policy. The
// turn itself, and the agent's max-concurrent-sessions slot, are the worker's.
import type { FastifyBaseLogger } from 'fastify';
import {
  HermesError, admit, admitAnswered, agentStopped, answerClarification, answerInsteadOfRunning, commandWord, QUEUED_COUNTED, type Answered, busyInterruptText, commandAllowed, commandText, commandRefusal, decideApproval, parseApprovalCommand, enqueueDelivery, getAdmissionStatus, parseCommand, parseControlCommand, publishSignal, recordSignal, sessionActivity, stoppedReply,
  type AdmissionState, type Admitted, type AdmitInput, type AgentRecord, type Permissions, type SessionSignal, type TraceCarrier,
} from '../core/index.js';
import { gatewayCommand, unavailableAnswer, type CommandAction } from './commands.js';
import type { GatewayContext } from './context.js';

type AnswerAction = Extract<CommandAction, { kind: 'answer' }>;

export interface Inbound {
  admissionId: string;
  sessionId: string;
  /** `queued`: the caller wakes a worker (enqueueSoon); `terminal`: answered here. */
  state: AdmissionState;
  duplicate: boolean;
  /** Answered, not queued: this many messages already waited in the conversation (HERMES_MAX_QUEUED_PER_SESSION). */
  queueFull?: number;
}

export interface InboundVia {
  trace: TraceCarrier;
  log: FastifyBaseLogger;
  /** The sender's permissions (team mode, core/permissions.ts): commands they may not use are refused here. */
  perms: Permissions;
}

/**
 * `/stop`, `/steer …`, `/redirect …` also reach the session's running turn out of band: a signal
 * row (Postgres) and a pub/sub announcement. The admission itself stays durable and gets a reply.
 * A failed announcement only costs latency for steer/redirect; it is logged, never fatal.
 */
export async function signalRunningTurn(ctx: GatewayContext, admitted: Admitted, content: string, perms: Permissions): Promise<void> {
  const command = parseControlCommand(content);
  // Team mode: a command this person may not use never reaches the turn.
  if (!command || !commandAllowed(perms, command.kind)) return;
  const signal = await recordSignal(ctx.deps.db.pool, { sessionId: admitted.sessionId, admissionId: admitted.admissionId, ...command });
  await publishSignal(ctx.deps.redis, ctx.deps.config.HERMES_QUEUE_PREFIX, signal)
    .catch((err: unknown) => ctx.deps.log.warn({ err, session: admitted.sessionId }, 'Control signal publish failed'));
}

/**
 * `/approve` and `/deny [reason]` get through while a turn runs (SPEC): the decision is recorded
 * now, for the session's oldest pending approval of this same user (or anyone's, for a designated
 * approver), and the waiting guard reads
 * it; the admission itself is answered after that turn, without the model.
 */
export async function recordApprovalDecision(ctx: GatewayContext, agent: AgentRecord, admitted: Admitted, content: string, perms: Permissions): Promise<void> {
  const command = parseApprovalCommand(content);
  if (!command || !commandAllowed(perms, command.decision === 'approved' ? 'approve' : 'deny')) return;
  // A designated approver (an admin, or an `approve` grant of spec.access) decides for anyone in a
  // shared session (a thread), as Hermes' approvals are the session's; without team mode only the
  // waiting turn's own user does (everyone may approve there, so no one is designated).
  const anyUser = perms.admin || (agent.compiled.access !== undefined && perms.approve);
  const decided = await decideApproval(ctx.deps.db.pool, { decidingAdmissionId: admitted.admissionId, ...command, anyUser });
  ctx.deps.log.info({ session: admitted.sessionId, admissionId: admitted.admissionId, approval: decided?.id, decision: command.decision }, decided ? 'Recorded an approval decision' : 'An approval command found nothing waiting');
}

/**
 * A plain message while a clarify question of this same user waits in the session is its answer
 * (recorded now; the waiting turn reads it) instead of news for the busy policy: it must not
 * interrupt the turn it answers. True when it answered one.
 */
export async function recordClarifyAnswer(ctx: GatewayContext, admitted: Admitted, content: string): Promise<boolean> {
  if (admitted.clarifyWaiting === false) return false; // hermes_admit looked: nothing of this user waits
  const answered = await answerClarification(ctx.deps.db.pool, admitted.admissionId, content);
  if (answered) ctx.deps.log.info({ session: admitted.sessionId, admissionId: admitted.admissionId, clarification: answered.id }, 'Recorded a clarify answer');
  return answered !== undefined;
}

/**
 * Answers a command now: admission + reply + obligation in one transaction, then the delivery
 * wake-up, then its signals. Announced only after the answer is queued, so a `/stop`'s "Stopping
 * the running turn." goes out before the stopped turn's own notice.
 */
async function answered(ctx: GatewayContext, input: AdmitInput, action: AnswerAction, via: InboundVia): Promise<Inbound> {
  const a = await admitAnswered(ctx.deps.db, input, action.reply, { rebindsKey: action.rebindsKey === true });
  await announce(ctx, a, action.signals ?? [], via);
  const state = a.duplicate ? (await getAdmissionStatus(ctx.deps.db.pool, a.admissionId))?.state ?? 'terminal' : 'terminal';
  return { admissionId: a.admissionId, sessionId: a.sessionId, state, duplicate: a.duplicate };
}

/** After an answer is committed: the delivery wake-up, then the answer's signals. */
async function announce(ctx: GatewayContext, a: Answered, signals: readonly SessionSignal[], via: InboundVia): Promise<void> {
  if (a.obligationId && a.deliveryPending) {
    // A lost wake-up is found by the sweeper (pending obligations are re-enqueued).
    await enqueueDelivery(ctx.deps.queues, { obligationId: a.obligationId, trace: via.trace })
      .catch((err: unknown) => via.log.warn({ err, obligation: a.obligationId }, 'Delivery enqueue failed; the sweeper will send the answer'));
  }
  for (const s of signals) {
    await publishSignal(ctx.deps.redis, ctx.deps.config.HERMES_QUEUE_PREFIX, s)
      .catch((err: unknown) => via.log.warn({ err, session: s.sessionId }, 'Control signal publish failed'));
  }
}

/** The HTTP API's answer to a message past HERMES_MAX_QUEUED_PER_SESSION: 429, the same words. */
export const conversationFull = (waiting: number): HermesError => new HermesError('HERMES_CONVERSATION_FULL',
  `${waitingCount(waiting)} messages are already waiting for their turn in it (HERMES_MAX_QUEUED_PER_SESSION). Wait for their answers, or send /new to start over (it drops the waiting ones).`);

const waitingCount = (n: number) => (n >= QUEUED_COUNTED ? `At least ${QUEUED_COUNTED}` : `${n}`);

/** What a message past HERMES_MAX_QUEUED_PER_SESSION is answered. */
export const sessionQueueFullReply = (platform: string, waiting: number): string =>
  `${waitingCount(waiting)} messages are already waiting for their turn in this conversation, so this one was not queued. `
  + `Wait for their answers and send it again, or send ${commandWord(platform, 'new')} to start over (it drops the waiting ones).`;

/**
 * One conversation's queue is bounded: a message admitted behind HERMES_MAX_QUEUED_PER_SESSION
 * others is answered instead of run (it stays in the ledger, `discarded`). Controls of the running
 * turn (`/stop`, `/steer`, `/redirect`, `/approve`, `/deny`) always get through (SPEC). Undefined:
 * it may wait.
 */
async function refuseWhenQueueFull(ctx: GatewayContext, input: AdmitInput, admitted: Admitted, via: InboundVia): Promise<Inbound | undefined> {
  const waiting = admitted.queuedAhead ?? 0;
  if (admitted.duplicate || waiting < ctx.deps.config.HERMES_MAX_QUEUED_PER_SESSION) return undefined;
  if (parseControlCommand(input.content) || parseApprovalCommand(input.content)) return undefined;
  const a = await answerInsteadOfRunning(ctx.deps.db, input, admitted, `not queued: ${waiting} messages were waiting in the session (HERMES_MAX_QUEUED_PER_SESSION)`,
    sessionQueueFullReply(input.platform, waiting));
  if (!a) return undefined;
  via.log.warn({ session: admitted.sessionId, admissionId: admitted.admissionId, waiting }, 'A conversation\'s queue is full; the message was answered, not queued');
  await announce(ctx, a, [], via);
  return { admissionId: a.admissionId, sessionId: a.sessionId, state: 'terminal', duplicate: false, queueFull: waiting };
}

/**
 * The busy policy (Agent spec.busyPolicy) for a plain message while a turn of its session runs:
 * `queue` — it runs next (nothing to do); `steer` — its text goes to the running turn after the
 * current tool batch (a steer signal; if the model never sees it, it runs as its own turn);
 * `interrupt` — the running turn is stopped (a stop signal) and the message runs next.
 */
async function applyBusyPolicy(ctx: GatewayContext, agent: AgentRecord, admitted: Admitted, content: string): Promise<void> {
  const policy = agent.compiled.busyPolicy;
  if (policy === 'queue') return;
  const { running } = await sessionActivity(ctx.deps.db.pool, admitted.sessionId, admitted.admissionId);
  if (!running) return;
  const signal = await recordSignal(ctx.deps.db.pool, {
    sessionId: admitted.sessionId, admissionId: admitted.admissionId,
    ...(policy === 'steer' ? { kind: 'steer' as const, text: content } : { kind: 'stop' as const, text: busyInterruptText }),
  });
  await publishSignal(ctx.deps.redis, ctx.deps.config.HERMES_QUEUE_PREFIX, signal)
    .catch((err: unknown) => ctx.deps.log.warn({ err, session: admitted.sessionId }, 'Busy-policy signal publish failed'));
}

/** What a new admission does to the session's running turn: signals, approval and clarify answers, the busy policy. */
async function reachRunningTurn(ctx: GatewayContext, agent: AgentRecord, admitted: Admitted, m: { content: string; perms: Permissions; plain: boolean; busy: boolean }): Promise<void> {
  await signalRunningTurn(ctx, admitted, m.content, m.perms);
  await recordApprovalDecision(ctx, agent, admitted, m.content, m.perms);
  // A clarify answer must not interrupt the turn it answers.
  const answers = m.plain && (await recordClarifyAnswer(ctx, admitted, m.content));
  if (m.busy && !answers) await applyBusyPolicy(ctx, agent, admitted, m.content);
}

export async function admitInbound(ctx: GatewayContext, agent: AgentRecord, received: AdmitInput, via: InboundVia): Promise<Inbound> {
  // A control character after the command word (`/status<NUL>`) ends it as a space does.
  const input = { ...received, content: commandText(received.content) };
  // SPEC: the emergency-stop gate comes before anything is admitted as work: a short refusal, no turn.
  if (agentStopped(agent)) return answered(ctx, input, { kind: 'answer', reply: stoppedReply }, via);
  const command = parseCommand(input.content);
  // A Hermes command this runtime lacks (never a known one): answered now, never the model's to read.
  const unavailable = await unavailableAnswer(ctx, agent, input, via.perms);
  if (unavailable) return answered(ctx, input, unavailable, via);
  let content = input.content;
  const plain = !command && !parseControlCommand(input.content);
  let busy = plain;
  if (command) {
    // THE place commands are dispatched (gateway and turn commands alike): team mode's per-user
    // gate first; a refused command is answered at once, never a turn, never a signal.
    if (!commandAllowed(via.perms, command.name)) return answered(ctx, input, { kind: 'answer', reply: commandRefusal(command.name) }, via);
    const action = gatewayCommand({ ctx, agent, input, command, perms: via.perms });
    if (action?.kind === 'answer') return answered(ctx, input, action, via);
    if (action?.kind === 'admit') {
      content = action.content;
      busy = !action.queue;
    }
  }
  const admitted = await admit(ctx.deps.db, { ...input, content });
  const full = await refuseWhenQueueFull(ctx, { ...input, content }, admitted, via);
  if (full) return full;
  if (!admitted.duplicate) await reachRunningTurn(ctx, agent, admitted, { content, perms: via.perms, plain, busy });
  const state = admitted.duplicate ? (await getAdmissionStatus(ctx.deps.db.pool, admitted.admissionId))?.state ?? 'queued' : 'queued';
  return { admissionId: admitted.admissionId, sessionId: admitted.sessionId, state, duplicate: admitted.duplicate };
}
