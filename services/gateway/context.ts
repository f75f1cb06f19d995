// The per-app state shared by routes: deps, the channel hub, the status poller and waiter, the
// per-key wait limit, and the shutdown signal that ends long waits and streams when the app closes.
import { setMaxListeners } from 'node:events';
import type { FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { HermesError, duplicateRedis, redisLiveness, type Logger } from '../core/index.js';
import type { GatewayDeps } from './deps.js';
import { StatusPoller } from './status-poller.js';
import { ChannelHub } from './subscriber.js';
import { WaitLimiter } from './wait-limit.js';
import { TurnWaiter } from './waiter.js';

export interface GatewayContext {
  deps: GatewayDeps;
  hub: ChannelHub;
  poller: StatusPoller;
  waiter: TurnWaiter;
  waits: WaitLimiter;
  /** Aborted (with a HermesError) when the app starts closing. */
  shutdown: AbortSignal;
  beginShutdown(): void;
  /** Drops subscriptions (and closes the subscriber connection when the app opened it). */
  close(): Promise<void>;
}

/** The app's own subscriber connection when the caller gave none: queues while disconnected, retries forever. */
function ownSubscriber(redis: Redis, log: Logger, silenceSeconds: number): Redis {
  // Reconnects on its own (and when silent); waiters fall back to polling meanwhile.
  return duplicateRedis(redis, { liveness: redisLiveness(silenceSeconds, log, 'subscriber') });
}

export function createContext(deps: GatewayDeps): GatewayContext {
  const owned = deps.subscriber ? undefined : ownSubscriber(deps.redis, deps.log, deps.config.HERMES_REDIS_TIMEOUT_SECONDS);
  const hub = new ChannelHub(deps.subscriber ?? owned!, deps.log);
  const poller = new StatusPoller({ db: deps.db, log: deps.log, metrics: deps.metrics, pollMs: deps.tuning?.pollMs ?? 500 });
  const waiter = new TurnWaiter({ db: deps.db, hub, poller, prefix: deps.config.HERMES_QUEUE_PREFIX, log: deps.log });
  const closing = new AbortController();
  // Every waiting request and stream listens for shutdown: hundreds at once is normal.
  setMaxListeners(0, closing.signal);
  return {
    deps, hub, poller, waiter,
    waits: new WaitLimiter(deps.config.HERMES_MAX_WAITS_PER_KEY),
    shutdown: closing.signal,
    beginShutdown: () => closing.abort(new HermesError('HERMES_GATEWAY_CLOSING')),
    async close() {
      poller.close();
      await hub.close();
      owned?.disconnect();
    },
  };
}

/** Links a client may use to follow an admission. */
export function admissionLinks(namespace: string, name: string, admissionId: string): { self: string; events: string } {
  const self = `/v1/agents/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/admissions/${admissionId}`;
  return { self, events: `${self}/events` };
}

/**
 * The signal a turn wait runs under: app shutdown, the client going away (`request.clientGone`,
 * armed when the request arrived) and HERMES_REPLY_WAIT_SECONDS (→ 504, naming where to follow up).
 */
export function waitSignal(ctx: GatewayContext, request: FastifyRequest, links: { self: string }): { signal: AbortSignal; dispose(): void } {
  const deadline = new AbortController();
  const seconds = ctx.deps.config.HERMES_REPLY_WAIT_SECONDS;
  const timer = setTimeout(() => deadline.abort(new HermesError('HERMES_REPLY_TIMEOUT', `Waited ${seconds} s (HERMES_REPLY_WAIT_SECONDS). Follow it at ${links.self}.`)), seconds * 1_000);
  const combined = new AbortController();
  // Composed by hand (not AbortSignal.any) so nothing stays attached to the long-lived shutdown signal.
  const sources = [ctx.shutdown, deadline.signal, request.clientGone];
  const follow = sources.map((s) => {
    const onAbort = () => combined.abort(s.reason);
    if (s.aborted) onAbort();
    else s.addEventListener('abort', onAbort, { once: true });
    return () => s.removeEventListener('abort', onAbort);
  });
  return {
    signal: combined.signal,
    dispose() {
      clearTimeout(timer);
      for (const stop of follow) stop();
    },
  };
}
