// Delivers final replies recorded as obligations. One adapter per platform sends (chat platforms:
// platform-delivery.ts); the ledger records attempting before the send and delivered only after
// it succeeded; a platform rate limit (RateLimited) defers the row to `not_before` without spending
// an attempt; a refusal for good (Undeliverable: the chat is gone or closed to the bot) abandons
// the row at once instead of spending its remaining attempts. `api` replies are read by the caller
// from the gateway, so their obligations are delivered when written (core ledger/deliveries.ts
// pulledPlatforms).
import type { Redis } from 'ioredis';
import { RateLimited, Undeliverable, splitMessage } from '../platforms/index.js';
import {
  claimDelivery, deferDelivery, duplicateMarker, isSilentReply, isStoreUnavailable, markDelivered, markFailed, recordPiecesSent, takeProgressMessage,
  type Config, type Db, type Instance, type Judge, type Logger, type Metrics, type Obligation,
} from '../core/index.js';

export interface DeliveryAdapter {
  /** Sends `text`; throws on failure. `signal` aborts at the attempt deadline (HERMES_DELIVERY_ATTEMPT_SECONDS). */
  send(ob: Obligation, text: string, signal: AbortSignal): Promise<unknown>;
  /**
   * The platform's message length limit. When set, the ledger splits the reply itself, sends one
   * piece per `send` and records each piece sent (`pieces_sent`), so a retry after a failed later
   * piece sends only the rest. Unset: the whole reply is one `send`.
   */
  maxMessageChars?: number;
  /** The platform's "working…" message while a turn runs (worker/progress.ts); unset: no progress shown. */
  progress?: ProgressChannel;
  /**
   * True for a target that waits for exactly one reply to its own request (a Discord `/ask`
   * interaction, a signed webhook request): silence there leaves the request unanswered for good
   * ("thinking…" until Discord gives up), so a turn the runtime itself silences answers with a
   * short notice instead (turn-runner.ts). Unset or false: a chat, where the next answer shows up
   * in the same place and silence is Hermes' semantics.
   */
  answersEachRequest?(target: unknown): boolean;
  /**
   * A routing adapter (`cron`): the adapter and obligation that really send `ob`, so the ledger
   * splits at that platform's limit and records each piece. Undefined: this adapter sends it.
   */
  route?(ob: Obligation): { adapter: DeliveryAdapter; ob: Obligation } | undefined;
}

/** Where a turn's reply will go: its agent (for the platform settings and token) and target. */
export interface ProgressRef { agentId: string; target: unknown }

/**
 * Progress shown while a turn runs: a message posted, edited and removed (Slack), or a typing
 * indicator re-sent on each edit whose `post` returns a placeholder id and whose `remove` does nothing.
 */
export interface ProgressChannel {
  /** Posts a message (or shows the indicator); returns its reference, undefined when nothing is shown (then no edits follow). */
  post(ref: ProgressRef, text: string, signal: AbortSignal): Promise<string | undefined>;
  edit(ref: ProgressRef, messageId: string, text: string, signal: AbortSignal): Promise<void>;
  remove(ref: ProgressRef, messageId: string, signal: AbortSignal): Promise<void>;
}

export interface DeliveryDeps {
  config: Config;
  db: Db;
  redis: Redis;
  instance: Instance;
  log: Logger;
  metrics: Metrics;
  adapters: Map<string, DeliveryAdapter>;
  /** Whether we may judge other owners dead (worker liveness); without one only stopped owners are. */
  judge?: Judge;
  /**
   * Told when a rate limit deferred the obligation until `notBefore`: the worker moves the delivery
   * job to BullMQ's delayed set until then, so the retry goes at the platform's Retry-After, not
   * at the sweeper's next pass. Unset: the sweeper re-enqueues it when due.
   */
  onDeferred?: (notBefore: Date) => void;
}

const retryAfterSeconds = (attempt: number) => (attempt <= 1 ? 30 : 120);

/** A reply that is a silence token is stored but never sent (core isSilentReply; usually settled when the turn ends). */
const isSilence = isSilentReply;

/** Flood control honours the platform's wait up to this (Hermes: 15 min). */
const MAX_FLOOD_WAIT_SECONDS = 900;

/** A few quick tries of a ledger write (a Postgres blip); the attempt deadline covers what they miss. */
async function retried<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= 4 || !isStoreUnavailable(err)) throw err;
      await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
    }
  }
}

const markerPrefix = `♻️ (${duplicateMarker})\n\n`;

/**
 * The reply's pieces, split the same way on every attempt (`pieces_sent` counts into this list).
 * The duplicate marker is added after splitting, so it never moves the cuts; a piece it pushes
 * past the limit is split once more by the platform's sender (the rare re-send of a full piece).
 */
export const replyPieces = (content: string, maxChars: number) => splitMessage(content, maxChars);

/** A piece went out but recording it failed: the failure is recorded as uncertain (the re-send is marked). */
class UnrecordedPiece extends Error {
  override name = 'UnrecordedPiece';
}

/** Sends the pieces not sent yet, recording each; the first one this attempt sends carries the marker on a possible duplicate. */
async function sendPieces(deps: DeliveryDeps, adapter: DeliveryAdapter & { maxMessageChars: number }, ob: Obligation, signal: AbortSignal): Promise<void> {
  const pieces = replyPieces(ob.content, adapter.maxMessageChars);
  for (let i = ob.piecesSent; i < pieces.length; i++) {
    const text = ob.possibleDuplicate && i === ob.piecesSent ? `${markerPrefix}${pieces[i]!}` : pieces[i]!;
    await adapter.send(ob, text, signal);
    const recorded = await retried(() => recordPiecesSent(deps.db.pool, ob.id, deps.instance, i + 1)).catch(() => false);
    if (!recorded) {
      deps.metrics.ledgerWriteFailures.inc({ operation: 'delivery_piece' });
      throw new UnrecordedPiece(`piece ${i + 1} of ${pieces.length} was sent but could not be recorded`);
    }
  }
}

async function sendWithin(deps: DeliveryDeps, owed: Obligation, seconds: number): Promise<void> {
  const own = deps.adapters.get(owed.platform);
  if (!own) throw new Error(`no delivery adapter for platform "${owed.platform}"`);
  const { adapter, ob } = own.route?.(owed) ?? { adapter: own, ob: owed };
  const deadline = AbortSignal.timeout(seconds * 1_000);
  let onAbort: (() => void) | undefined;
  const late = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error(`the platform did not answer within ${seconds} s (HERMES_DELIVERY_ATTEMPT_SECONDS)`));
    deadline.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const { maxMessageChars } = adapter;
    const sending = maxMessageChars
      ? sendPieces(deps, { ...adapter, maxMessageChars }, ob, deadline)
      : adapter.send(ob, ob.possibleDuplicate ? `${markerPrefix}${ob.content}` : ob.content, deadline);
    await Promise.race([sending, late]);
  } finally {
    deadline.removeEventListener('abort', onAbort!);
  }
}

/**
 * Flood control (SPEC): the platform said "not before N s": the row goes back to pending with
 * `not_before`, the attempt given back; `onDeferred` wakes it then (the worker's delayed job), and
 * the sweeper enqueues it when due if that wake-up is lost.
 */
async function defer(deps: DeliveryDeps, ob: Obligation, err: RateLimited, log: Logger): Promise<'deferred'> {
  const seconds = Math.min(err.retryAfterSeconds, MAX_FLOOD_WAIT_SECONDS);
  const notBefore = new Date(Date.now() + seconds * 1_000);
  const deferred = await retried(() => deferDelivery(deps.db.pool, ob.id, deps.instance, notBefore))
    .catch((e: unknown) => { deps.metrics.ledgerWriteFailures.inc({ operation: 'delivery_deferred' }); throw e; });
  if (deferred) deps.onDeferred?.(notBefore);
  deps.metrics.deliveries.inc({ platform: ob.platform, outcome: 'deferred' });
  log.info({ retryAfterSeconds: seconds }, 'Delivery rate-limited by the platform; deferred without spending an attempt');
  return 'deferred';
}

/** The reply is out (or never will be): the turn's "working…" message goes. Best effort. */
async function removeProgress(deps: DeliveryDeps, ob: Obligation, log: Logger): Promise<void> {
  const channel = deps.adapters.get(ob.platform)?.progress;
  if (!channel) return;
  try {
    const m = await takeProgressMessage(deps.db.pool, ob.admissionId);
    if (m) await channel.remove({ agentId: ob.agentId, target: m.target }, m.messageId, AbortSignal.timeout(10_000));
  } catch (err) {
    log.debug({ err }, 'Could not remove the progress message (ignored)');
  }
}

export async function deliver(deps: DeliveryDeps, obligationId: string): Promise<'delivered' | 'deferred' | 'skipped' | 'failed' | 'abandoned'> {
  const { config, db, instance } = deps;
  const rule = { instanceTtlSeconds: config.HERMES_INSTANCE_TTL_SECONDS, steady: deps.judge?.steady() ?? false };
  const ob = await claimDelivery(db.pool, obligationId, instance, rule, config.HERMES_DELIVERY_ATTEMPT_SECONDS);
  if (!ob) return 'skipped';
  const log = deps.log.child({ obligation: ob.id, admission: ob.admissionId, platform: ob.platform });
  try {
    // The agent chose to say nothing (Hermes' silence tokens): the reply stays in the transcript, nothing is sent.
    if (isSilence(ob.content)) log.info('Reply is a silence token; recorded, not sent');
    else await sendWithin(deps, ob, config.HERMES_DELIVERY_ATTEMPT_SECONDS);
  } catch (err) {
    if (err instanceof RateLimited) return defer(deps, ob, err, log);
    // If even this write fails, the attempt deadline makes the row claimable again (as a possible duplicate).
    // No attempts left to spend (0) on a refusal for good: the row is abandoned now.
    const state = await retried(() => markFailed(db.pool, ob.id, instance, (err as Error).message, {
      maxAttempts: err instanceof Undeliverable ? 0 : config.HERMES_DELIVERY_MAX_ATTEMPTS, maxAgeSeconds: config.HERMES_DELIVERY_MAX_AGE_SECONDS, retryAfterSeconds: retryAfterSeconds(ob.attempts),
      uncertain: err instanceof UnrecordedPiece,
    })).catch((e: unknown) => { deps.metrics.ledgerWriteFailures.inc({ operation: 'delivery_failed' }); throw e; });
    deps.metrics.deliveries.inc({ platform: ob.platform, outcome: state ?? 'lost' });
    log.warn({ err, state }, err instanceof Undeliverable ? 'Delivery refused for good by the platform; abandoned without further attempts' : 'Delivery attempt failed');
    if (state === 'abandoned') await removeProgress(deps, ob, log);
    return state === 'abandoned' ? 'abandoned' : 'failed';
  }
  const ok = await retried(() => markDelivered(db.pool, ob.id, instance)).catch((e: unknown) => {
    // The ledger never blocks sending: the reply went out; count the write failure.
    deps.metrics.ledgerWriteFailures.inc({ operation: 'delivery_delivered' });
    log.error({ err: e }, 'Delivered, but recording it failed');
    return false;
  });
  deps.metrics.deliveries.inc({ platform: ob.platform, outcome: isSilence(ob.content) ? 'silent' : 'delivered' });
  if (ok) log.info('Delivered reply');
  // A send_message to another chat is not this turn's answer: its "working…" message stays.
  if (!ob.callKey.startsWith('send:')) await removeProgress(deps, ob, log);
  return 'delivered';
}
