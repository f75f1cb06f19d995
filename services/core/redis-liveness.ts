// A Redis connection that goes silent is replaced, not waited on for ever.
//
// ioredis notices a connection that closes or resets, but not one whose peer vanished without a
// word (a Redis node or NAT failure, a frozen server): its commands then wait for ever — a
// producer's enqueue, a BullMQ worker's next job, a subscriber's messages, the readiness ping.
// BullMQ guards only its own blocking connection (a watchdog around BZPOPMIN). So each connection
// we open carries this watchdog: a PING every `intervalMs`; no answer within `timeoutMs` while the
// connection says it is ready means the path is dead, and the socket is dropped so that ioredis
// reconnects (its retry strategy), sends again the commands that were waiting and, for
// subscribers, subscribes again. PING is valid in subscriber mode, and it queues behind the
// connection's own commands, so it only fails when nothing on that connection is answered.
//
// A stalled event loop is not a silent Redis: when the deadline fires much later than it was set
// for, the process itself was not running, and the probe is given a fresh deadline instead.
import type { Redis } from 'ioredis';
import type { Logger } from './logger.js';

export interface RedisLivenessOptions {
  /** Time between probes. @defaultValue 5000 */
  intervalMs?: number;
  /** How long a probe may go unanswered before the connection is dropped. @defaultValue 10000 */
  timeoutMs?: number;
  /** Told when a silent connection is dropped. */
  log?: Logger;
  /** Names the connection in the log (e.g. "subscriber"). */
  name?: string;
  /** Called after a silent connection was dropped (tests, metrics). */
  onDropped?: () => void;
}

export const defaultLiveness = { intervalMs: 5_000, timeoutMs: 10_000 } as const;

/** The watchdog for a connection named `name` of a process whose `HERMES_REDIS_TIMEOUT_SECONDS` is `timeoutSeconds`. */
export const redisLiveness = (timeoutSeconds: number, log: Logger, name: string): RedisLivenessOptions => ({
  timeoutMs: timeoutSeconds * 1_000, intervalMs: timeoutSeconds * 500, log, name,
});

/**
 * Probes `redis` while it is connected and drops its socket when a probe goes unanswered. Runs
 * from each `ready` until the connection ends for good (`end`); its timers never hold the process
 * open. Returns a function that stops it.
 */
export function watchLiveness(redis: Redis, opts: RedisLivenessOptions = {}): () => void {
  const intervalMs = opts.intervalMs ?? defaultLiveness.intervalMs;
  const timeoutMs = opts.timeoutMs ?? defaultLiveness.timeoutMs;
  const what = opts.name ? `the ${opts.name} connection` : 'a connection';
  let ticker: NodeJS.Timeout | undefined;
  /** The probe in flight: its deadline, cleared by its answer. */
  let pending: { deadline?: NodeJS.Timeout } | undefined;
  let stopped = false;

  /** Calls `onExpiry` after `timeoutMs` of this process running; the probe's deadline is kept on it. */
  const arm = (probe: { deadline?: NodeJS.Timeout }, onExpiry: () => void) => {
    const setAt = performance.now();
    probe.deadline = setTimeout(() => {
      // The process was not running for a good part of the wait: the silence may be ours.
      if (performance.now() - setAt - timeoutMs > timeoutMs / 2) arm(probe, onExpiry);
      else onExpiry();
    }, timeoutMs);
    probe.deadline.unref();
  };

  const probe = () => {
    if (pending || redis.status !== 'ready') return;
    const mine: { deadline?: NodeJS.Timeout } = {};
    pending = mine;
    const socket = redis.stream;
    const settle = () => {
      clearTimeout(mine.deadline);
      if (pending === mine) pending = undefined;
    };
    arm(mine, () => {
      if (pending === mine) pending = undefined;
      // The socket this probe went out on is gone already: ioredis is reconnecting on its own.
      if (redis.stream !== socket || redis.status !== 'ready') return;
      opts.log?.warn({ connection: opts.name, timeoutMs }, `Redis did not answer on ${what} for ${timeoutMs} ms; dropping it to reconnect`);
      opts.onDropped?.();
      // Destroyed, not ended: a vanished peer never acknowledges a FIN, and until the socket
      // closes ioredis would keep calling it ready. On 'close' ioredis reconnects (retryStrategy).
      socket.destroy();
    });
    redis.ping().then(settle, settle);
  };

  const start = () => {
    if (stopped || ticker) return;
    ticker = setInterval(probe, intervalMs);
    ticker.unref();
  };
  const pause = () => {
    clearInterval(ticker);
    ticker = undefined;
    clearTimeout(pending?.deadline);
    pending = undefined;
  };
  const stop = () => {
    stopped = true;
    pause();
    redis.off('ready', start);
    redis.off('end', pause);
  };

  redis.on('ready', start);
  redis.on('end', pause);
  if (redis.status === 'ready') start();
  return stop;
}

/**
 * Says once per outage that `redis` cannot be reached, and when it answers again: a process
 * starting while Redis is down waits for it (its commands queue), and must not do so in silence.
 */
export function reportOutages(redis: Redis, log: Logger, name?: string): void {
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    const { host, port } = redis.options;
    log.warn({ connection: name, redis: `${host}:${port}`, err: err.message }, 'Redis (REDIS_URL) cannot be reached; retrying until it answers');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    log.info({ connection: name }, 'Redis answers again');
  });
}
