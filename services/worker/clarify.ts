// The worker's side of clarify (issue 14), after the approvals' durable wait: the question is
// parked in Postgres and sent to the turn's chat as a delivery obligation, then the turn polls the
// row until the user's next message answers it (recorded by the gateway at admission), its
// deadline passes (Profile clarify.timeoutSeconds; Hermes' clarify_timeout 3600 s) or the turn is
// stopped. A turn cut by a shutdown resumes on another worker and takes the wait over
// (resumeClarification), so the answer still reaches the model as the clarify call's result. The
// answering message itself is answered silently when the waiting turn took it; an answer nobody
// took (the turn died) runs as an ordinary message, so nothing the user wrote is lost.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import {
  SILENT_REPLY, adoptClarification, clarifyEventOf, publishTurnEvent, appendTurnMessage, clarificationAnsweredBy, closeClarification, consumeClarification, enqueueDelivery, parkClarification, readClarification, turnStillWaits,
  type Admission, type Clarification, type CompiledAgent, type Db, type Lease, type Logger, type Queues, type TurnContext, type TurnResult,
} from '../core/index.js';
import type { ClarifyAccess, ClarifyOutcome, ClarifyRequest } from '../agent/index.js';
import { LeaseFence } from './lease-keeper.js';
import { ShutdownCut } from './settle.js';

/** The turn is handed over, not stopped (a shutdown's cut, our own lease deadline): the question stays open for the resumed turn. */
const handedOver = (reason: unknown): boolean => reason instanceof ShutdownCut || (reason instanceof LeaseFence && !reason.definite);

/** Hermes' agent.clarify_timeout. */
export const DEFAULT_CLARIFY_TIMEOUT_SECONDS = 3_600;

export const clarifyTimeoutOf = (agent: CompiledAgent): number => agent.clarify?.timeoutSeconds ?? DEFAULT_CLARIFY_TIMEOUT_SECONDS;

export interface ClarifyWaitDeps {
  db: Db;
  queues: Queues;
  log: Logger;
  /** How often the pending row is re-read. */
  pollMs: number;
  /** Where message-API clients following the turn hear of the question (pub/sub: a latency aid; they also read it from Postgres). */
  events?: { redis: Redis; prefix: string };
}

const outcomeStatus = (out: ClarifyOutcome): string => (out.status === 'answered' ? 'answered' : out.status === 'timeout' ? 'expired' : out.status === 'stopped' ? 'cancelled' : 'unavailable');

/** Tells the clients following admission `admissionId` that question `c` waits (or ended as `status`). */
async function announce(deps: ClarifyWaitDeps, admissionId: string, c: Clarification, status: string = c.status): Promise<void> {
  if (!deps.events) return;
  await publishTurnEvent(deps.events.redis, deps.events.prefix, admissionId, { type: 'clarify', clarify: { ...clarifyEventOf(c), status } })
    .catch((err: unknown) => deps.log.warn({ err, clarification: c.id }, 'Could not announce a clarify question to the turn\'s followers'));
}

/** Polls question `id` until it is answered, expired or the signal stops the wait. */
async function waitFor(deps: ClarifyWaitDeps, id: string, timeoutSeconds: number, signal: AbortSignal, keepAlive?: () => void): Promise<ClarifyOutcome> {
  const { db, log, pollMs } = deps;
  const giveUpAt = Date.now() + timeoutSeconds * 1_000 + 30_000;
  const take = async (row: Clarification | undefined): Promise<ClarifyOutcome | undefined> => {
    if (!row) return { status: 'unavailable', reason: 'the pending question disappeared' };
    if (row.status === 'answered') {
      await consumeClarification(db.pool, row.id);
      return { status: 'answered', answer: row.answer ?? '' };
    }
    if (row.status === 'pending' && !row.expired) return undefined;
    if (row.status === 'pending' || row.status === 'expired') {
      const now = await closeClarification(db.pool, id, 'expired');
      return now?.status === 'answered' ? take(now) : { status: 'timeout', timeoutSeconds };
    }
    return { status: 'stopped' };
  };
  for (;;) {
    if (signal.aborted && handedOver(signal.reason)) return { status: 'stopped' };
    if (signal.aborted) {
      const now = await closeClarification(db.pool, id, 'cancelled').catch(() => undefined);
      // An answer that got in first still wins.
      return now?.status === 'answered' ? ((await take(now)) ?? { status: 'stopped' }) : { status: 'stopped' };
    }
    try {
      const done = await take(await readClarification(db.pool, id));
      if (done) return done;
    } catch (err) {
      log.warn({ err, clarification: id }, 'Could not read a pending question; retrying');
      if (Date.now() > giveUpAt) return { status: 'unavailable', reason: 'the question store is unreachable' };
    }
    keepAlive?.();
    await sleep(pollMs, undefined, { signal }).catch(() => undefined);
  }
}

/** clarify for one turn: park, send the question to the chat, wait. */
export class DurableClarify implements ClarifyAccess {
  constructor(private readonly deps: ClarifyWaitDeps, private readonly adm: Admission, private readonly timeoutSeconds: number) {}

  async ask(req: ClarifyRequest, signal: AbortSignal, keepAlive?: () => void): Promise<ClarifyOutcome> {
    const { db, queues, log } = this.deps;
    let parked: Awaited<ReturnType<typeof parkClarification>>;
    try {
      parked = await parkClarification(db, { admissionId: this.adm.id, question: req.question, ...(req.choices ? { choices: req.choices } : {}), timeoutSeconds: this.timeoutSeconds });
    } catch (err) {
      log.warn({ err, admission: this.adm.id }, 'Could not record a clarify question');
      return { status: 'unavailable', reason: 'the question store is unreachable' };
    }
    if (parked.deliveryPending) {
      // A lost wake-up is found by the sweeper (pending obligations are re-enqueued).
      await enqueueDelivery(queues, { obligationId: parked.obligationId }).catch((err: unknown) => log.warn({ err, obligation: parked.obligationId }, 'Question delivery enqueue failed; the sweeper will send it'));
    }
    log.info({ admission: this.adm.id, clarification: parked.clarification.id }, 'Asked the user a clarify question; waiting for the answer');
    await announce(this.deps, this.adm.id, parked.clarification);
    const out = await waitFor(this.deps, parked.clarification.id, this.timeoutSeconds, signal, keepAlive);
    if (!(signal.aborted && handedOver(signal.reason))) await announce(this.deps, this.adm.id, parked.clarification, outcomeStatus(out));
    return out;
  }
}

/** The result text the clarify tool gives for `out` (the same shape as the tool's own). */
function resultText(c: Clarification, out: ClarifyOutcome, timeoutSeconds: number): string {
  const asked = { question: c.question, ...(c.choices?.length ? { choices_offered: c.choices } : {}) };
  if (out.status === 'answered') return JSON.stringify({ ...asked, user_response: out.answer });
  if (out.status === 'timeout') return JSON.stringify({ ...asked, status: 'timeout', user_response: null, note: `The user did not answer within ${timeoutSeconds} s. Carry on with your best judgement and tell them what you assumed.` });
  if (out.status === 'stopped') return JSON.stringify({ ...asked, status: 'stopped', user_response: null, note: 'The wait was stopped (/stop) before the user answered.' });
  return JSON.stringify({ error: `The question could not be asked: ${out.reason}.`, ...asked });
}

export interface ResumeSetup {
  deps: ClarifyWaitDeps;
  lease: Lease;
  adm: Admission;
  agent: CompiledAgent;
  signal: AbortSignal;
}

/**
 * A turn resumed after a shutdown cut whose turn waited on clarify: take the question over, wait
 * on (it may be answered already), and record the continued call and its outcome in the
 * transcript — the cut call got a "cancelled" result, so the model sees the wait interrupted and
 * then resumed with the user's answer, and continues from there.
 */
export async function resumeClarification(s: ResumeSetup, ctx: TurnContext): Promise<TurnContext> {
  const { deps, adm } = s;
  if (adm.intent !== 'resume' || !adm.resumeOf) return ctx;
  const c = await adoptClarification(deps.db.pool, adm.id, adm.resumeOf);
  if (!c) return ctx;
  deps.log.info({ admission: adm.id, clarification: c.id }, 'Resumed the wait for a clarify answer');
  const timeoutSeconds = clarifyTimeoutOf(s.agent);
  if (c.status === 'pending') await announce(deps, adm.id, c);
  const out = await waitFor(deps, c.id, timeoutSeconds, s.signal);
  if (!(s.signal.aborted && handedOver(s.signal.reason))) await announce(deps, adm.id, c, outcomeStatus(out));
  if (s.signal.aborted && out.status !== 'answered') return ctx;
  const call = { id: `clarify-resumed-${c.id}`, name: 'clarify', arguments: JSON.stringify({ question: c.question, ...(c.choices?.length ? { choices: c.choices } : {}) }) };
  const content = resultText(c, out, timeoutSeconds);
  const asked = await appendTurnMessage(deps.db, s.lease, adm.id, { role: 'assistant', content: '', toolCalls: [call] });
  const result = await appendTurnMessage(deps.db, s.lease, adm.id, { role: 'tool', content, toolCallId: call.id, effectDisposition: 'applied' });
  const row = { interrupted: false, admissionId: adm.id, effectDisposition: null, toolCallId: null, toolCalls: null };
  return { ...ctx, transcript: [...ctx.transcript,
    { ...row, seq: asked.seq, role: 'assistant', content: '', toolCalls: [call] },
    { ...row, seq: result.seq, role: 'tool', content, toolCallId: call.id, effectDisposition: 'applied' }] };
}

/**
 * The reply of a plain message that answered a clarify question (undefined for other messages):
 * the waiting turn took it and answered — this one ends silently; nobody took it (that turn died
 * or ended) — it runs as an ordinary message.
 */
export async function clarifyAnswerReply(db: Db, adm: Admission): Promise<TurnResult | undefined> {
  // Read with the claim (hermes_claim_next) unless this admission came from elsewhere.
  const c = adm.answeredClarification !== undefined ? adm.answeredClarification : await clarificationAnsweredBy(db.pool, adm.id);
  if (!c) return undefined;
  if (c.consumed) return { outcome: 'completed', reply: SILENT_REPLY };
  if (await turnStillWaits(db.pool, c.admissionId)) return undefined;
  await db.pool.query(`UPDATE clarifications SET status = 'abandoned' WHERE id = $1 AND consumed_at IS NULL`, [c.id]);
  return undefined;
}
