// Delivers final replies recorded as obligations. One adapter per platform sends (chat platforms:
// platform-delivery.ts); the ledger records attempting before the send and delivered only after
// it succeeded; a platform rate limit (RateLimited) defers the row to `not_before` without spending
// an attempt. `api` replies are read by the caller from the gateway, so their obligations are
// delivered when written (core ledger/deliveries.ts pulledPlatforms).
import type { Redis } from 'ioredis';
import { RateLimited } from '../platforms/index.js';
import {
  claimDelivery, deferDelivery, duplicateMarker, isSilentReply, isStoreUnavailable, markDelivered, markFailed,
  type Config, type Db, type Instance, type Judge, type Logger, type Metrics, type Obligation,
} from '../core/index.js';

export interface DeliveryAdapter {
  /** Sends `text`; throws on failure. `signal` aborts at the attempt deadline (HERMES_DELIVERY_ATTEMPT_SECONDS). */
  send(ob: Obligation, text: string, signal: AbortSignal): Promise<void>;
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

async function sendWithin(adapter: DeliveryAdapter | undefined, ob: Obligation, text: string, seconds: number): Promise<void> {
  if (!adapter) throw new Error(`no delivery adapter for platform "${ob.platform}"`);
  const deadline = AbortSignal.timeout(seconds * 1_000);
  let onAbort: (() => void) | undefined;
  const late = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error(`the platform did not answer within ${seconds} s (HERMES_DELIVERY_ATTEMPT_SECONDS)`));
    deadline.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([adapter.send(ob, text, deadline), late]);
  } finally {
    deadline.removeEventListener('abort', onAbort!);
  }
}

/**
 * Flood control (SPEC): the platform said "not before N s": the row goes back to pending with
 * `not_before`, the attempt given back; the sweeper enqueues it when due.
 */
async function defer(deps: DeliveryDeps, ob: Obligation, err: RateLimited, log: Logger): Promise<'deferred'> {
  const seconds = Math.min(err.retryAfterSeconds, MAX_FLOOD_WAIT_SECONDS);
  await retried(() => deferDelivery(deps.db.pool, ob.id, deps.instance, new Date(Date.now() + seconds * 1_000)))
    .catch((e: unknown) => { deps.metrics.ledgerWriteFailures.inc({ operation: 'delivery_deferred' }); throw e; });
  deps.metrics.deliveries.inc({ platform: ob.platform, outcome: 'deferred' });
  log.info({ retryAfterSeconds: seconds }, 'Delivery rate-limited by the platform; deferred without spending an attempt');
  return 'deferred';
}

export async function deliver(deps: DeliveryDeps, obligationId: string): Promise<'delivered' | 'deferred' | 'skipped' | 'failed' | 'abandoned'> {
  const { config, db, instance } = deps;
  const rule = { instanceTtlSeconds: config.HERMES_INSTANCE_TTL_SECONDS, steady: deps.judge?.steady() ?? false };
  const ob = await claimDelivery(db.pool, obligationId, instance, rule, config.HERMES_DELIVERY_ATTEMPT_SECONDS);
  if (!ob) return 'skipped';
  const log = deps.log.child({ obligation: ob.id, admission: ob.admissionId, platform: ob.platform });
  const text = ob.possibleDuplicate ? `♻️ (${duplicateMarker})\n\n${ob.content}` : ob.content;
  try {
    // The agent chose to say nothing (Hermes' silence tokens): the reply stays in the transcript, nothing is sent.
    if (isSilence(ob.content)) log.info('Reply is a silence token; recorded, not sent');
    else await sendWithin(deps.adapters.get(ob.platform), ob, text, config.HERMES_DELIVERY_ATTEMPT_SECONDS);
  } catch (err) {
    if (err instanceof RateLimited) return defer(deps, ob, err, log);
    // If even this write fails, the attempt deadline makes the row claimable again (as a possible duplicate).
    const state = await retried(() => markFailed(db.pool, ob.id, instance, (err as Error).message, {
      maxAttempts: config.HERMES_DELIVERY_MAX_ATTEMPTS, maxAgeSeconds: config.HERMES_DELIVERY_MAX_AGE_SECONDS, retryAfterSeconds: retryAfterSeconds(ob.attempts),
    })).catch((e: unknown) => { deps.metrics.ledgerWriteFailures.inc({ operation: 'delivery_failed' }); throw e; });
    deps.metrics.deliveries.inc({ platform: ob.platform, outcome: state ?? 'lost' });
    log.warn({ err, state }, 'Delivery attempt failed');
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
  return 'delivered';
}
