// The dispatcher across replicas: every gateway campaigns (runAsLeader, a Postgres advisory lock
// named `kanban-dispatcher`), the holder ticks every HERMES_KANBAN_TICK_SECONDS. It judges other
// workers dead by heartbeat only once it has led for one instance TTL (a steady judge, like the
// sweeper): right after a failover or a Postgres restart every heartbeat looks old.
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { Db } from '../db.js';
import type { Logger } from '../logger.js';
import { pause } from '../pause.js';
import { runAsLeader, type Leadership, type LeaderTuning } from '../pg-leader.js';
import type { Queues } from '../queues.js';
import { dispatchTick, type DispatchPolicy, type TickReport } from './dispatcher.js';

export const DISPATCHER_LOCK = 'kanban-dispatcher';

export function dispatchPolicy(config: Config): DispatchPolicy {
  return {
    failureLimit: config.HERMES_KANBAN_FAILURE_LIMIT, claimTtlSeconds: config.HERMES_KANBAN_CLAIM_TTL_SECONDS, staleSeconds: config.HERMES_KANBAN_STALE_SECONDS,
    maxRuntimeSeconds: config.HERMES_KANBAN_MAX_RUNTIME_SECONDS, claimsPerTick: config.HERMES_KANBAN_CLAIMS_PER_TICK,
  };
}

export interface DispatcherDeps {
  config: Config;
  db: Db;
  queues: Queues;
  redis: Redis;
  log: Logger;
  /** The clock every tick uses. @defaultValue () => new Date() */
  clock?: () => Date;
  tuning?: Partial<LeaderTuning>;
  /** Called after each tick (metrics, tests). */
  onTick?: (r: TickReport) => void;
}

export function runKanbanDispatcher(deps: DispatcherDeps): Leadership {
  const clock = deps.clock ?? (() => new Date());
  const log = deps.log.child({ subsystem: 'kanban-dispatcher' });
  const policy = dispatchPolicy(deps.config);
  return runAsLeader({
    databaseUrl: deps.config.DATABASE_URL, name: DISPATCHER_LOCK, log, ...(deps.tuning ? { tuning: deps.tuning } : {}),
    lead: async (signal) => {
      const since = Date.now();
      while (!signal.aborted) {
        const steady = Date.now() - since >= deps.config.HERMES_INSTANCE_TTL_SECONDS * 1_000;
        try {
          const report = await dispatchTick({ db: deps.db, queues: deps.queues, redis: deps.redis, queuePrefix: deps.config.HERMES_QUEUE_PREFIX, policy, log, rule: { instanceTtlSeconds: deps.config.HERMES_INSTANCE_TTL_SECONDS, steady } }, clock());
          deps.onTick?.(report);
          if (report.claimed.length || report.reclaimed || report.crashed || report.stale || report.timedOut) log.info(report, 'Dispatched Kanban tasks');
        } catch (err) {
          log.warn({ err }, 'A Kanban dispatcher tick failed; the next one retries');
        }
        await pause(deps.config.HERMES_KANBAN_TICK_SECONDS * 1_000, signal);
      }
    },
  });
}
