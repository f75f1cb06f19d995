// One turn per session at a time: the worker that wins the session lease drains the session's
// queued admissions in sequence order, then releases and re-checks so nothing is stranded.
// Shutdown (worker/index.ts): `draining` stops claiming at once — the session is handed to another
// worker after the running turn — and `shutdown` (end of the grace period) cuts the running turn.
import {
  beginTurn, enqueueTurn, nextQueued, nextWaitingAdmission, releaseLease, type Admission, type Instance, type SessionSlots, type StartedTurn,
} from '../core/index.js';
import { keepLease } from './lease-keeper.js';
import type { Liveness } from './liveness.js';
import { runAdmission, type TurnDeps } from './turn-runner.js';

export interface DrainDeps extends TurnDeps {
  instance: Instance;
  liveness: Liveness;
  /** Aborted as soon as the process is asked to stop: start no further turn. */
  draining: AbortSignal;
  /** Aborted (with a ShutdownCut) when the shutdown grace period is over: cut the running turns. */
  shutdown: AbortSignal;
  /** Sessions with a turn running in this process (shutdown marks them resume_pending). */
  running: Set<string>;
}

/**
 * Runs the session's queued turns while this worker holds its lease. Under the agent's
 * maxConcurrentSessions the lease is taken only with a free slot (else the admissions wait,
 * queued), and letting it go wakes the agent's oldest waiting session.
 */
export async function drainSession(deps: DrainDeps, sessionId: string): Promise<number> {
  const seen: { slots?: SessionSlots } = {};
  try {
    return await drainWithin(deps, sessionId, seen);
  } finally {
    if (seen.slots?.cap !== undefined) await wakeWaiting(deps, seen.slots.agentId);
  }
}

/** The agent's cap, the lease and the first turn in one statement (hermes_begin_turn); `seen` keeps the session's agent and cap. */
async function start(deps: DrainDeps, sessionId: string, seen: { slots?: SessionSlots }): Promise<StartedTurn | 'full' | undefined> {
  const { config, db, liveness } = deps;
  const rule = { instanceTtlSeconds: config.HERMES_INSTANCE_TTL_SECONDS, steady: liveness.steady() };
  const began = await beginTurn(db, { sessionId, owner: deps.instance.id, ttlSeconds: config.HERMES_LEASE_TTL_SECONDS, rule });
  if (!began) return undefined;
  seen.slots = began.slots;
  return began.full ? 'full' : began.started;
}

async function drainWithin(deps: DrainDeps, sessionId: string, seen: { slots?: SessionSlots }): Promise<number> {
  const { config, db, liveness } = deps;
  let ran = 0;
  while (!deps.draining.aborted) {
    const acquiredAt = liveness.now();
    // Nothing queued or a live holder: nothing to do here. No free slot: the admissions wait, queued.
    const started = await start(deps, sessionId, seen);
    if (started === 'full') deps.log.info({ session: sessionId, agent: seen.slots?.agentId, maxConcurrentSessions: seen.slots?.cap }, 'Session waits for a free slot (maxConcurrentSessions)');
    if (!started || started === 'full') return ran;
    const { lease } = started;
    const keeper = keepLease({ lease, acquiredAt, ttlSeconds: config.HERMES_LEASE_TTL_SECONDS, renewSeconds: config.HERMES_LEASE_RENEW_SECONDS, liveness, log: deps.log });
    const fence = {
      signal: AbortSignal.any([keeper.signal, deps.shutdown]), heldUntil: keeper.heldUntil, now: liveness.now,
      // Each finish claims the next turn in the same statement, or lets the lease go when we stop.
      after: () => (deps.draining.aborted || keeper.signal.aborted ? 'release' as const : 'next' as const),
    };
    let released = false;
    try {
      let adm: Admission | undefined = started.admission;
      while (adm) {
        deps.running.add(sessionId);
        try {
          const after = await runAdmission(deps, lease, adm, fence);
          released = after.released;
          adm = after.next;
        } finally {
          deps.running.delete(sessionId);
        }
        ran++;
      }
    } finally {
      keeper.stop();
    }
    // Released by the finish: nothing was queued then, and anyone admitted since finds the lease free.
    if (released) {
      if (deps.draining.aborted) await handOff(deps, sessionId);
      return ran;
    }
    const queuedLeft = await releaseLease(db.pool, lease).catch(() => true);
    if (!queuedLeft) return ran;
    if (fence.signal.aborted) break;
  }
  await handOff(deps, sessionId);
  return ran;
}

/** A slot of the agent may be free now: wake its oldest waiting session (a distinct job id, so it is added again). */
async function wakeWaiting(deps: DrainDeps, agentId: string): Promise<void> {
  if (deps.draining.aborted) return;
  const next = await nextWaitingAdmission(deps.db.pool, agentId).catch(() => undefined);
  if (!next) return;
  await enqueueTurn(deps.queues, { admissionId: next.id, sessionId: next.sessionId, ...(next.traceContext ? { trace: next.traceContext } : {}) }, `${next.id}-slot-${Date.now()}`)
    .catch((err: unknown) => deps.log.warn({ err, session: next.sessionId }, 'Slot wake-up enqueue failed; the sweeper will pick the session up'));
}

/** We stop draining with admissions left: wake another worker for them (the sweeper would, later). */
async function handOff(deps: DrainDeps, sessionId: string): Promise<void> {
  const next = await nextQueued(deps.db.pool, sessionId).catch(() => undefined);
  if (!next) return;
  // Its own job id may be the job running now (still active): a distinct id wakes a worker at once.
  await enqueueTurn(deps.queues, { admissionId: next.id, sessionId, ...(next.traceContext ? { trace: next.traceContext } : {}) }, `${next.id}-handoff`)
    .catch((err: unknown) => deps.log.warn({ err, session: sessionId }, 'Hand-off enqueue failed; the sweeper will pick the session up'));
}
