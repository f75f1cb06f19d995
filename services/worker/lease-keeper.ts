// Keeps a session lease while its turn runs, and fences the turn locally: the turn is cancelled
// ("session turn lease lost", SPEC) as soon as the lease is known lost, and also — before anyone
// else could take the session over — when the lease could not be renewed in time or this
// process's heartbeat could look stale (liveness.ts). Writes stay fenced by (owner, epoch) in
// Postgres either way; the local deadline is what keeps two turns of a session from overlapping.
import { renewLease, type Lease, type Logger } from '../core/index.js';
import type { Liveness } from './liveness.js';

/** Why a lease keeper cancelled its turn. */
export class LeaseFence extends Error {
  override name = 'LeaseFence';
  /**
   * @param definite true when Postgres said the holding is gone; false when we stopped at our local
   * deadline without knowing (Postgres unreachable) — the holding may still be ours.
   */
  constructor(readonly definite: boolean, detail: string) {
    super(`session turn lease lost (${detail})`);
  }
}

export interface LeaseKeeper {
  /** Aborted with a {@link LeaseFence}. */
  signal: AbortSignal;
  /** Monotonic ms until which the holding is surely ours unless Postgres says otherwise. */
  heldUntil(): number;
  stop(): void;
}

export interface KeepLeaseOptions {
  lease: Lease;
  /** Monotonic time just before the statement that acquired the lease. */
  acquiredAt: number;
  ttlSeconds: number;
  renewSeconds: number;
  liveness: Liveness;
  log: Logger;
}

export function keepLease(o: KeepLeaseOptions): LeaseKeeper {
  const { lease, liveness, log } = o;
  const ttlMs = o.ttlSeconds * 1_000;
  const renewMs = o.renewSeconds * 1_000;
  const retryMs = Math.max(100, Math.min(renewMs / 4, 5_000));
  const controller = new AbortController();
  let heldUntil = o.acquiredAt + ttlMs - liveness.marginMs;
  let nextRenewal = o.acquiredAt + renewMs;
  let renewing = false;

  const fence = (definite: boolean, detail: string) => {
    if (controller.signal.aborted) return;
    log.warn({ session: lease.sessionId, epoch: lease.epoch, detail }, 'Lost the session turn lease; cancelling the turn');
    controller.abort(new LeaseFence(definite, detail));
  };
  const renew = () => {
    renewing = true;
    const sent = liveness.now();
    renewLease(liveness.pool, lease, o.ttlSeconds)
      .then((ok) => {
        if (!ok) return fence(true, 'expired, released or taken over');
        heldUntil = sent + ttlMs - liveness.marginMs;
        nextRenewal = sent + renewMs;
      })
      .catch((err: unknown) => {
        nextRenewal = liveness.now() + retryMs;
        log.warn({ err, session: lease.sessionId }, 'Lease renewal failed; retrying until the lease deadline');
      })
      .finally(() => { renewing = false; });
  };
  const check = () => {
    if (controller.signal.aborted) return;
    const t = liveness.now();
    if (t >= heldUntil) return fence(false, 'not renewed in time');
    if (t >= liveness.fenceAt()) return fence(false, 'heartbeat not confirmed in time');
    if (t >= nextRenewal && !renewing) renew();
  };
  const timer = setInterval(check, Math.max(50, Math.min(retryMs, 1_000)));
  timer.unref();
  return { signal: controller.signal, heldUntil: () => heldUntil, stop: () => clearInterval(timer) };
}
