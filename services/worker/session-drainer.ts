// One turn per session at a time: the worker that wins the session lease drains the session's
// queued admissions in sequence order, then releases and re-checks so nothing is stranded.
import { acquireLease, hasQueued, releaseLease, startNextTurn, type Instance } from '../core/index.js';
import { keepLease } from './lease-keeper.js';
import { runAdmission, type TurnDeps } from './turn-runner.js';

export interface DrainDeps extends TurnDeps {
  instance: Instance;
  /** Aborted when the process must stop now (drain timeout). */
  shutdown: AbortSignal;
}

export async function drainSession(deps: DrainDeps, sessionId: string): Promise<number> {
  const { config, db } = deps;
  let ran = 0;
  for (;;) {
    const lease = await acquireLease(db.pool, sessionId, deps.instance.id, config.HERMES_LEASE_TTL_SECONDS);
    if (!lease) return ran; // the holder drains what we would have run
    const keeper = keepLease(db, lease, config.HERMES_LEASE_TTL_SECONDS, config.HERMES_LEASE_RENEW_SECONDS, deps.log);
    try {
      for (;;) {
        if (keeper.signal.aborted || deps.shutdown.aborted) break;
        const adm = await startNextTurn(db, lease);
        if (!adm) break;
        const signal = AbortSignal.any([keeper.signal, deps.shutdown]);
        await runAdmission(deps, lease, adm, signal);
        ran++;
      }
    } finally {
      keeper.stop();
      await releaseLease(db.pool, lease).catch(() => undefined);
    }
    if (deps.shutdown.aborted || !(await hasQueued(db.pool, sessionId))) return ran;
  }
}
