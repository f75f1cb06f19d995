// Opening and closing the shared resources of a process (config, db, redis, queues, agent
// cache, logger, metrics, tracing) and wiring SIGTERM/SIGINT to a graceful close.
import type { Redis } from 'ioredis';
import {
  AgentCache, closeRedis, connectRedis, createLogger, createMetrics, initTracing, loadConfig, openDb, openQueues, redisLiveness, shutdownTracing,
  type Config, type Db, type Logger, type Metrics, type Queues,
} from '../core/index.js';

export interface Runtime {
  config: Config;
  db: Db;
  redis: Redis;
  queues: Queues;
  agents: AgentCache;
  log: Logger;
  metrics: Metrics;
  close(): Promise<void>;
}

/** Opens the connections of a process on a validated config (tests use this directly). */
export async function openResources(config: Config, component: string): Promise<Runtime> {
  const log = createLogger(component, config.HERMES_LOG_LEVEL);
  const metrics = createMetrics(component);
  const db = openDb(config.DATABASE_URL, { applicationName: `hermes-${component}`, queryTimeoutMs: config.HERMES_DB_QUERY_TIMEOUT_SECONDS * 1_000, max: config.HERMES_DB_POOL_SIZE });
  const redis = connectRedis(config.REDIS_URL, { liveness: redisLiveness(config.HERMES_REDIS_TIMEOUT_SECONDS, log, 'main') });
  const queues = openQueues(redis, config.HERMES_QUEUE_PREFIX);
  const agents = new AgentCache(db, config.DATABASE_URL, { log, metrics });
  await agents.start();
  return {
    config, db, redis, queues, agents, log, metrics,
    async close() {
      await queues.close();
      await agents.close();
      await closeRedis(redis);
      await db.close();
    },
  };
}

/** A process's runtime: config from the environment (validated once), tracing, connections. */
export async function openRuntime(component: string, overrides: Partial<Record<keyof Config, unknown>> = {}): Promise<Runtime> {
  const config = loadConfig(process.env, overrides);
  initTracing(component, config);
  const resources = await openResources(config, component);
  return {
    ...resources,
    async close() {
      await resources.close();
      await shutdownTracing();
    },
  };
}

const signalExitCodes: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Calls `stop` once on SIGTERM/SIGINT, then exits 0; a second signal exits at once, saying so,
 * with 128 + its number (the turns still running are left to recovery).
 */
export function onShutdown(log: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'Second signal: exiting now without waiting for running turns (recovery settles them)');
      process.exit(signalExitCodes[signal] ?? 1);
    }
    stopping = true;
    log.info({ signal }, 'Shutting down');
    stop().then(() => process.exit(0), (err: unknown) => { log.error({ err }, 'Shutdown failed'); process.exit(1); });
  };
  // `on`, not `once`: with `once` a second SIGTERM met Node's default action and killed the
  // process without a word, and the branch above never ran.
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
