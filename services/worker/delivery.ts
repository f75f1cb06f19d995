// Delivers final replies recorded as obligations. One adapter per platform sends; the ledger
// records attempting before the send and delivered only after it succeeded. Chat platforms add
// their adapters in their own issue; `api` replies are read by the caller from the gateway, so
// delivering one means announcing it to waiting gateways.
import type { Redis } from 'ioredis';
import {
  claimDelivery, duplicateMarker, markDelivered, markFailed, publishTurnEvent,
  type Config, type Db, type Instance, type Logger, type Metrics, type Obligation,
} from '../core/index.js';

export interface DeliveryAdapter {
  /** Sends `text`; throws on failure. */
  send(ob: Obligation, text: string): Promise<void>;
}

export interface DeliveryDeps {
  config: Config;
  db: Db;
  redis: Redis;
  instance: Instance;
  log: Logger;
  metrics: Metrics;
  adapters: Map<string, DeliveryAdapter>;
}

export function apiAdapter(redis: Redis, prefix: string): DeliveryAdapter {
  return { send: (ob) => publishTurnEvent(redis, prefix, ob.admissionId, { type: 'changed' }) };
}

const retryAfterSeconds = (attempt: number) => (attempt <= 1 ? 30 : 120);

export async function deliver(deps: DeliveryDeps, obligationId: string): Promise<'delivered' | 'skipped' | 'failed' | 'abandoned'> {
  const { config, db, instance } = deps;
  const ob = await claimDelivery(db.pool, obligationId, instance, config.HERMES_INSTANCE_TTL_SECONDS);
  if (!ob) return 'skipped';
  const log = deps.log.child({ obligation: ob.id, admission: ob.admissionId, platform: ob.platform });
  const adapter = deps.adapters.get(ob.platform);
  const text = ob.possibleDuplicate ? `♻️ (${duplicateMarker})\n\n${ob.content}` : ob.content;
  try {
    if (!adapter) throw new Error(`no delivery adapter for platform "${ob.platform}"`);
    await adapter.send(ob, text);
  } catch (err) {
    const state = await markFailed(db.pool, ob.id, instance, (err as Error).message, {
      maxAttempts: config.HERMES_DELIVERY_MAX_ATTEMPTS, maxAgeSeconds: config.HERMES_DELIVERY_MAX_AGE_SECONDS, retryAfterSeconds: retryAfterSeconds(ob.attempts),
    }).catch((e: unknown) => { deps.metrics.ledgerWriteFailures.inc({ operation: 'delivery_failed' }); throw e; });
    deps.metrics.deliveries.inc({ platform: ob.platform, outcome: state ?? 'lost' });
    log.warn({ err, state }, 'Delivery attempt failed');
    return state === 'abandoned' ? 'abandoned' : 'failed';
  }
  const ok = await markDelivered(db.pool, ob.id, instance).catch((e: unknown) => {
    // The ledger never blocks sending: the reply went out; count the write failure.
    deps.metrics.ledgerWriteFailures.inc({ operation: 'delivery_delivered' });
    log.error({ err: e }, 'Delivered, but recording it failed');
    return false;
  });
  deps.metrics.deliveries.inc({ platform: ob.platform, outcome: 'delivered' });
  if (ok) log.info('Delivered reply');
  return 'delivered';
}
