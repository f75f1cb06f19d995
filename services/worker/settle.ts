// Writing a turn's end. The answer is kept whenever the lease still allows it: transient errors
// (Postgres restarting, a connection reset) are retried until the lease could have passed, and
// the write itself is fenced by (owner, epoch), so retrying is always safe. A turn cut without
// its own fault — the drain deadline of a shutdown, or our local lease deadline while Postgres was
// unreachable — is not reported as a failure: it is cut and resumed once (turns.ts cutTurn).
import {
  LeaseLostError, cutTurn, enqueueDelivery, enqueueTurn, finishTurn, injectTraceContext, isStoreUnavailable, pgText, publishTurnEvent,
  recordModelCall, type Admission, type Config, type Db, type FinishedTurn, type Lease, type Logger, type Queues, type TurnEvent, type TurnResult, type TurnUsage,
} from '../core/index.js';
import type { Redis } from 'ioredis';
import { LeaseFence } from './lease-keeper.js';

export interface SettleDeps {
  config: Config;
  db: Db;
  redis: Redis;
  queues: Queues;
}

/** The reason a turn is cut at the end of a shutdown's grace period. */
export class ShutdownCut extends Error {
  override name = 'ShutdownCut';
  constructor() {
    super('worker shutting down');
  }
}

/** What the turn ran under: the abort signal and how long the lease is surely ours (monotonic ms). */
export interface TurnFence {
  signal: AbortSignal;
  heldUntil(): number;
  now(): number;
  /** After this turn: claim the session's next turn under the same lease, or let the lease go (shutting down). @defaultValue 'keep' */
  after?(): 'next' | 'release';
}

/** Cut rather than finished: interrupted by a shutdown or by our own lease deadline, not by a user or an error. */
export function isCut(result: TurnResult, reason: unknown): boolean {
  if (result.outcome !== 'interrupted') return false;
  return reason instanceof ShutdownCut || (reason instanceof LeaseFence && !reason.definite);
}

/** How the ledger names a cut's cause (after "cut by "). */
const cutCause = (reason: unknown) => (reason instanceof ShutdownCut ? 'a worker shutdown' : `its worker's own fence (${(reason as Error).message})`);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs a ledger write of the turn until it succeeds, the lease is lost, or the error is not a
 * transient store error — so a Postgres blip mid-turn costs latency, not the turn.
 */
export async function whileLeaseHolds<T>(write: () => Promise<T>, fence: TurnFence, log: Logger): Promise<T> {
  let wait = 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (err instanceof LeaseLostError || !isStoreUnavailable(err) || fence.now() + wait > fence.heldUntil()) throw err;
      if (attempt === 1) log.warn({ err }, 'A ledger write of the turn failed; retrying while the lease holds');
      else log.debug({ err: (err as Error).message, attempt }, 'Retrying a ledger write of the turn');
      await pause(wait);
      wait = Math.min(wait * 2, 2_000);
    }
  }
}

export type Settled =
  | { kind: 'finished'; outcome: TurnResult['outcome']; obligationId: string; deliveryPending: boolean; released: boolean; next?: Admission; recorded: Recorded }
  | { kind: 'cut'; resumeAdmissionId?: string; obligationId?: string; deliveryPending?: boolean };

const FAILED_REPLY = 'Sorry — something went wrong on our side.';

/** The reply text and final usage as hermes_finish_turn stored them. */
interface Recorded { reply: string; usage: TurnUsage }

const usageOf = (u: unknown): TurnUsage => {
  const v = (u ?? {}) as { inputTokens?: unknown; outputTokens?: unknown };
  return { inputTokens: typeof v.inputTokens === 'number' ? v.inputTokens : 0, outputTokens: typeof v.outputTokens === 'number' ? v.outputTokens : 0 };
};

const finished = (result: TurnResult, done: FinishedTurn): Settled => ({
  kind: 'finished', outcome: result.outcome, obligationId: done.obligationId, deliveryPending: done.deliveryPending, released: done.released, ...(done.next ? { next: done.next } : {}),
  recorded: { reply: pgText(result.reply), usage: usageOf(result.usage) },
});

/** The `end` of a finished turn's "changed" event: what its transaction wrote (admission-status.ts reads the same back). */
function endEvent(adm: Admission, s: Extract<Settled, { kind: 'finished' }>): NonNullable<Extract<TurnEvent, { type: 'changed' }>['end']> {
  return {
    outcome: s.outcome,
    reply: { id: s.obligationId, agentId: adm.agentId, sessionId: adm.sessionId, platform: adm.platform, target: adm.replyTarget, content: s.recorded.reply, state: s.deliveryPending ? 'pending' : 'delivered' },
    usage: s.recorded.usage,
  };
}

/** A produced turn to record: its lease, admission, result and fence. */
export interface TurnEnd {
  lease: Lease;
  adm: Admission;
  result: TurnResult;
  fence: TurnFence;
  log: Logger;
}

/** Records the end of `adm` and wakes what comes next (delivery, or the resume turn). Throws LeaseLostError when fenced. */
export async function settleTurn(deps: SettleDeps, end: TurnEnd): Promise<Settled> {
  const { adm, log } = end;
  const settled = await record(deps, end);
  const { config, queues, redis } = deps;
  // After the commit: a finished turn's ping carries what was written, so waiters answer without reading it back.
  await publishTurnEvent(redis, config.HERMES_QUEUE_PREFIX, adm.id, settled.kind === 'finished' ? { type: 'changed', end: endEvent(adm, settled) } : { type: 'changed' }).catch(() => undefined);
  const trace = injectTraceContext();
  if (settled.kind === 'cut' && settled.resumeAdmissionId) {
    // Another worker resumes it (this one is stopping or cut off); the sweeper re-enqueues if this add is lost.
    await enqueueTurn(queues, { admissionId: settled.resumeAdmissionId, sessionId: adm.sessionId, trace }).catch((err: unknown) => log.warn({ err }, 'Resume enqueue failed; the sweeper will pick it up'));
  }
  if (settled.obligationId && settled.deliveryPending) {
    await enqueueDelivery(queues, { obligationId: settled.obligationId, trace }).catch((err: unknown) => log.warn({ err }, 'Delivery enqueue failed; the sweeper will pick it up'));
  }
  return settled;
}

async function record(deps: SettleDeps, { lease, adm, result, fence, log }: TurnEnd): Promise<Settled> {
  const reason: unknown = fence.signal.aborted ? fence.signal.reason : undefined;
  if (isCut(result, reason)) {
    // The calls were made: their rows count, whatever happens to the turn.
    for (const row of result.usageRows ?? []) await whileLeaseHolds(() => recordModelCall(deps.db.pool, row), fence, log);
    const cut = await whileLeaseHolds(() => cutTurn(deps.db, lease, adm.id, { reply: result.partial ?? '', usage: result.usage }, cutCause(reason)), fence, log);
    if ('ended' in cut) {
      log.warn({ reason: (reason as Error).message }, 'Cut the turn of a conversation /new ended; it is not resumed');
      return { kind: 'cut' };
    }
    log.warn({ reason: (reason as Error).message, resumedBy: cut.resumed ? cut.resumeAdmissionId : undefined }, cut.resumed ? 'Cut the turn; it resumes once on another worker' : 'Cut the turn a third time in a row; suspended the session');
    return cut.resumed ? { kind: 'cut', resumeAdmissionId: cut.resumeAdmissionId } : { kind: 'cut', obligationId: cut.obligationId, deliveryPending: cut.deliveryPending };
  }
  try {
    const done = await whileLeaseHolds(() => finishTurn(deps.db, lease, adm.id, result, { then: fence.after?.() ?? 'keep' }), fence, log);
    return finished(result, done);
  } catch (err) {
    if (err instanceof LeaseLostError || isStoreUnavailable(err)) throw err;
    // Postgres refused this result itself (not the connection): record a plain failure instead.
    log.error({ err }, 'Postgres refused the turn result; recording it as failed');
    const failed: TurnResult = { outcome: 'failed', reply: FAILED_REPLY, error: `result refused by the ledger: ${(err as Error).message}` };
    const done = await whileLeaseHolds(() => finishTurn(deps.db, lease, adm.id, failed, { then: fence.after?.() ?? 'keep' }), fence, log);
    return finished(failed, done);
  }
}
