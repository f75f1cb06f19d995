// The outbox sweeper and recovery loop, run by every worker (and `hermes dev`):
//  - leases of owners known dead → freed (their sessions recover at once, not after the lease TTL);
//  - started turns whose lease holding ended → unknown (never re-run), with a notice to deliver;
//  - queued admissions whose job was lost (Redis down/restarted after commit) → re-enqueued;
//  - due or orphaned delivery obligations → re-enqueued; expired ones → abandoned;
//  - stored oversized tool results past their retention → deleted;
//  - delegated children whose turn ended unsettled, or stale (15 idle heartbeat cycles) → settled
//    or failed, and a finished batch's results admitted into the parent session and enqueued.
// Every step is idempotent (job ids are row ids), so many sweepers may run at once.
import type { Queue } from 'bullmq';
import type { Config } from './config.js';
import type { Db } from './db.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import { enqueueDelivery, enqueueTurn, type Queues } from './queues.js';
import { listStrandedQueued, settleOrphanedTurns } from './ledger/admissions.js';
import type { DeathRule } from './ledger/instances.js';
import { freeDeadOwnersLeases } from './ledger/leases.js';
import { abandonExpired, countDeliveriesByState, getObligationForAdmission, listAbandonedAttempts, listDueDeliveries, oldestPendingAgeSeconds, pruneDeliveries } from './ledger/deliveries.js';
import { pruneToolResultSpills } from './ledger/spills.js';
import { pruneProgressMessages } from './ledger/progress.js';
import { SUBAGENT_HEARTBEAT_SECONDS, SUBAGENT_STALE_CYCLES, sweepSubagents } from './ledger/subagents.js';

type SweepConfig = Pick<Config, 'HERMES_INSTANCE_TTL_SECONDS' | 'HERMES_SWEEP_GRACE_SECONDS' | 'HERMES_DELIVERY_MAX_AGE_SECONDS' | 'HERMES_TOOL_RESULT_RETENTION_SECONDS'>;

export interface SweepReport {
  /** Leases of owners known dead, freed. */
  freedLeases: number;
  settledUnknown: number;
  requeuedTurns: number;
  requeuedDeliveries: number;
  abandoned: number;
  /** Stored tool results past their retention, deleted. */
  prunedToolResults: number;
  /** Settled delivery obligations pruned (SPEC: 7 days / 500 per session). */
  prunedDeliveries: number;
  /** Delegated children failed as stale (no progress heartbeat for 15 cycles of 30 s). */
  staleSubagents: number;
}

/** SPEC: settled obligations are kept 7 days, at most 500 per session. */
export const DELIVERY_RETENTION = { seconds: 7 * 86_400, perSession: 500 };

/** True when a job with this id is waiting or running; a finished one is removed so the id can be reused. */
async function jobIsLive(queue: Queue, id: string): Promise<boolean> {
  const job = await queue.getJob(id);
  if (!job) return false;
  const state = await job.getState();
  if (state === 'completed' || state === 'failed' || state === 'unknown') {
    await job.remove().catch(() => undefined);
    return false;
  }
  return true;
}

/** Whether this process may judge others dead by their heartbeats (worker/liveness.ts). */
export interface Judge {
  steady(): boolean;
}

/** Due or abandoned obligations → (re-)enqueued; returns how many. */
async function requeueDeliveries(db: Db, queues: Queues, rule: DeathRule, graceSeconds: number): Promise<number> {
  let n = 0;
  for (const id of await listDueDeliveries(db.pool, rule, graceSeconds)) {
    if (await jobIsLive(queues.deliveries, id)) continue;
    await enqueueDelivery(queues, { obligationId: id });
    n++;
  }
  // An abandoned attempt whose job still looks active (a SIGKILLed worker's lock): woken under its own job id; the claim is a conditional update, so a second job is harmless.
  for (const { id, attempts } of await listAbandonedAttempts(db.pool, rule)) {
    if (!(await jobIsLive(queues.deliveries, id))) continue;
    if (await jobIsLive(queues.deliveries, `${id}:retake:${attempts}`)) continue;
    await enqueueDelivery(queues, { obligationId: id }, { attempts });
    n++;
  }
  return n;
}

/** Delegated children: unsettled ends settled, stale ones failed, complete batches' result turns enqueued; returns how many went stale. */
async function sweepChildren(db: Db, queues: Queues): Promise<number> {
  const children = await sweepSubagents(db, SUBAGENT_HEARTBEAT_SECONDS * SUBAGENT_STALE_CYCLES);
  for (const batch of children.reported) await enqueueTurn(queues, { admissionId: batch.admissionId, sessionId: batch.sessionId });
  return children.stale.length;
}

/**
 * One pass. `judge` says whether our own view of heartbeats can be trusted right now; without one
 * (tests, tools) only stopped owners count as dead.
 */
export async function sweepOnce(db: Db, queues: Queues, config: SweepConfig, metrics?: Metrics, judge?: Judge): Promise<SweepReport> {
  const rule: DeathRule = { instanceTtlSeconds: config.HERMES_INSTANCE_TTL_SECONDS, steady: judge?.steady() ?? false };
  const report: SweepReport = { freedLeases: 0, settledUnknown: 0, requeuedTurns: 0, requeuedDeliveries: 0, abandoned: 0, prunedToolResults: 0, prunedDeliveries: 0, staleSubagents: 0 };

  report.freedLeases = (await freeDeadOwnersLeases(db.pool, rule)).length;
  for (const admissionId of await settleOrphanedTurns(db)) {
    report.settledUnknown++;
    metrics?.recoveredUnknown.inc();
    const ob = await getObligationForAdmission(db.pool, admissionId);
    if (ob?.state === 'pending') await enqueueDelivery(queues, { obligationId: ob.id });
  }
  for (const adm of await listStrandedQueued(db.pool, config.HERMES_SWEEP_GRACE_SECONDS, rule)) {
    if (await jobIsLive(queues.turns, adm.id)) continue;
    await enqueueTurn(queues, { admissionId: adm.id, sessionId: adm.sessionId, ...(adm.traceContext ? { trace: adm.traceContext } : {}) });
    report.requeuedTurns++;
    metrics?.sweeperRequeued.inc();
  }
  report.staleSubagents = await sweepChildren(db, queues);
  report.requeuedDeliveries = await requeueDeliveries(db, queues, rule, config.HERMES_SWEEP_GRACE_SECONDS);
  report.abandoned = await abandonExpired(db.pool, config.HERMES_DELIVERY_MAX_AGE_SECONDS);
  report.prunedToolResults = await pruneToolResultSpills(db.pool, config.HERMES_TOOL_RESULT_RETENTION_SECONDS);
  report.prunedDeliveries = await pruneDeliveries(db.pool, DELIVERY_RETENTION.seconds, DELIVERY_RETENTION.perSession);
  metrics?.prunedDeliveries.inc(report.prunedDeliveries);
  await pruneProgressMessages(db.pool, 86_400);
  metrics?.oldestPendingDeliverySeconds.set(await oldestPendingAgeSeconds(db.pool));
  if (metrics) for (const [state, n] of Object.entries(await countDeliveriesByState(db.pool))) metrics.deliveryObligations.set({ state }, n);
  return report;
}

/**
 * Runs `sweepOnce` every `HERMES_SWEEP_SECONDS` until stopped; errors are logged, never fatal. A
 * pass still running when the next is due (Postgres slow or down) is not doubled up.
 */
export function startSweeper(db: Db, queues: Queues, config: SweepConfig & Pick<Config, 'HERMES_SWEEP_SECONDS'>, log: Logger, watch: { metrics?: Metrics; judge?: Judge } = {}): { stop(): Promise<void> } {
  const { metrics, judge } = watch;
  let running: Promise<unknown> = Promise.resolve();
  let busy = false;
  let stopped = false;
  const tick = () => {
    if (busy) return;
    busy = true;
    running = sweepOnce(db, queues, config, metrics, judge)
      .then((r) => { if (r.freedLeases || r.settledUnknown || r.requeuedTurns || r.requeuedDeliveries || r.abandoned || r.staleSubagents) log.info(r, 'Swept the ledger'); })
      .catch((err: unknown) => log.warn({ err }, 'Ledger sweep failed; will retry'))
      .finally(() => { busy = false; });
  };
  const timer = setInterval(() => { if (!stopped) tick(); }, config.HERMES_SWEEP_SECONDS * 1_000);
  timer.unref();
  tick();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
