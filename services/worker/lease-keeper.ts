// Renews a session lease while a turn runs. Losing it aborts the turn with the reason
// "session turn lease lost" (SPEC): another worker may already own the session.
import { renewLease, type Db, type Lease, type Logger } from '../core/index.js';

export interface LeaseKeeper {
  signal: AbortSignal;
  stop(): void;
}

export function keepLease(db: Db, lease: Lease, ttlSeconds: number, renewSeconds: number, log: Logger): LeaseKeeper {
  const controller = new AbortController();
  const timer = setInterval(() => {
    renewLease(db.pool, lease, ttlSeconds)
      .then((ok) => {
        if (!ok && !controller.signal.aborted) {
          log.warn({ session: lease.sessionId, epoch: lease.epoch }, 'Lost the session turn lease; cancelling the turn');
          controller.abort(new Error('session turn lease lost'));
        }
      })
      .catch((err: unknown) => log.warn({ err, session: lease.sessionId }, 'Lease renewal failed; will retry until it expires'));
  }, renewSeconds * 1_000);
  timer.unref();
  return { signal: controller.signal, stop: () => clearInterval(timer) };
}
