// This process's liveness as others see it, and as it must act on it.
//
// Heartbeats go over a small pool of their own (with lease renewals), so a busy main pool never
// makes a live worker look dead. Two facts come out of them:
//  - `fenceAt()`: the moment after which our last heartbeat could look older than the instance TTL
//    to another process. Every running turn stops before it (lease-keeper.ts), so by the time
//    anyone may take our sessions over, we no longer act on them — no two turns of a session overlap.
//  - `steady()`: our own heartbeats have all succeeded for one whole TTL, so our view of other
//    processes' heartbeats can be trusted. After a Postgres restart or failover nobody is steady for
//    a TTL, which gives every live worker the time to heartbeat before anyone judges it dead.
import pg from 'pg';
import { endPool, heartbeat, type Judge, type Logger } from '../core/index.js';

export interface LivenessOptions {
  databaseUrl: string;
  instanceId: string;
  everySeconds: number;
  ttlSeconds: number;
  log: Logger;
  /** Monotonic clock in ms. @defaultValue performance.now */
  now?: () => number;
}

export interface Liveness extends Judge {
  /** Monotonic ms (on `now`) after which this process must not act on any session. */
  fenceAt(): number;
  /** The heartbeat pool: lease renewals use it too. */
  readonly pool: pg.Pool;
  /** Safety margin taken off every deadline (ms). */
  readonly marginMs: number;
  now(): number;
  /** Called with false when this process can no longer confirm it is alive (take no work), true when it can again. */
  onHealthChange(listener: (healthy: boolean) => void): void;
  stop(): Promise<void>;
}

/** A fifth of the TTL, at least 250 ms: time to stop a turn before the deadline it protects. */
export const safetyMargin = (ttlMs: number) => Math.max(250, ttlMs / 5);

export function startLiveness(opts: LivenessOptions): Liveness {
  const now = opts.now ?? (() => performance.now());
  const ttlMs = opts.ttlSeconds * 1_000;
  const everyMs = opts.everySeconds * 1_000;
  const marginMs = safetyMargin(ttlMs);
  // Bounded waits: a half-open connection must fail the beat, not hang it until the fence passes.
  const waitMs = Math.max(500, Math.min(everyMs, 5_000));
  const pool = new pg.Pool({
    connectionString: opts.databaseUrl, max: 2, application_name: 'hermes-worker-control',
    connectionTimeoutMillis: waitMs, query_timeout: waitMs, keepAlive: true,
  });
  pool.on('error', () => undefined);
  const started = now(); // the instance row was just written: that counts as a beat
  let lastOk = started;
  let steadySince: number | undefined = started;
  let revoked = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const listeners: ((healthy: boolean) => void)[] = [];
  let healthy = true;
  const fenceAt = () => (revoked ? -Infinity : lastOk + ttlMs - marginMs);
  const report = () => {
    // Unhealthy from half the TTL without a beat: stop taking work well before the fence.
    const now_ = now();
    const ok = !revoked && now_ < lastOk + ttlMs / 2;
    if (ok === healthy) return;
    healthy = ok;
    for (const l of listeners) l(ok);
  };

  const beat = async () => {
    const sent = now();
    try {
      const alive = await heartbeat(pool, opts.instanceId);
      if (!alive) {
        if (!revoked) opts.log.error({ instance: opts.instanceId }, 'Instance row is gone or marked stopped; stopping every running turn (others will recover them)');
        revoked = true;
        return;
      }
      if (steadySince === undefined || sent - lastOk > 2 * everyMs) steadySince = sent;
      lastOk = sent;
    } catch (err) {
      if (steadySince !== undefined) opts.log.warn({ err }, 'Heartbeat failed; judging other workers is off until heartbeats succeed for a whole instance TTL');
      steadySince = undefined;
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => { void beat().finally(() => { report(); schedule(); }); }, everyMs);
    timer.unref();
  };
  schedule();

  return {
    pool, marginMs, now,
    fenceAt,
    onHealthChange: (listener) => { listeners.push(listener); },
    steady: () => !revoked && steadySince !== undefined && now() - steadySince >= ttlMs,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await endPool(pool);
    },
  };
}
