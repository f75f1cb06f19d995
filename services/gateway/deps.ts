// What the gateway needs from its process. The caller owns every connection: building or closing
// the app never closes them. `openGatewayDeps` opens the usual set from a Config.
import type { Redis } from 'ioredis';
import {
  AgentCache, connectRedis, createLogger, createMetrics, openDb, openQueues, redisLiveness,
  type Config, type Db, type Logger, type Metrics, type Queues,
} from '../core/index.js';
import type { SecretReader } from '../platforms/index.js';

export interface GatewayTuning {
  /** Postgres poll interval of waiters. @defaultValue 500 */
  pollMs?: number;
  /** SSE heartbeat interval. @defaultValue 15000 */
  heartbeatMs?: number;
  /** How long a request waits for its BullMQ enqueue before answering anyway. @defaultValue 1000 */
  enqueueTimeoutMs?: number;
  /** Timeout of each /readyz check. @defaultValue 1500 */
  readinessTimeoutMs?: number;
  /** The clock platform signatures are checked against (Unix ms). @defaultValue Date.now */
  now?: () => number;
}

export interface GatewayDeps {
  config: Config;
  db: Db;
  /** Producer connection, fail-fast (`connectRedis(url, { failFast: true })`): Redis trouble never stalls a request. */
  redis: Redis;
  /**
   * A connection the gateway puts in subscriber mode for turn events (`connectRedis(url)`), used
   * for nothing else. When omitted, the app opens one (a duplicate of `redis`) and closes it itself.
   */
  subscriber?: Redis;
  /** Queues on the producer connection. */
  queues: Queues;
  agents: AgentCache;
  log: Logger;
  metrics: Metrics;
  /**
   * Reads platform secrets (Slack's signing secret) by reference, in the Agent's namespace (ADR
   * 0001). Without one, platform webhooks answer 503 and admit nothing.
   */
  secrets?: SecretReader;
  tuning?: GatewayTuning;
}

/** Opens connections for a gateway process; `close()` closes them (after the app). */
export async function openGatewayDeps(config: Config): Promise<GatewayDeps & { close(): Promise<void> }> {
  const log = createLogger('gateway', config.HERMES_LOG_LEVEL);
  const db = openDb(config.DATABASE_URL, { applicationName: 'hermes-gateway', queryTimeoutMs: config.HERMES_DB_QUERY_TIMEOUT_SECONDS * 1_000, max: config.HERMES_DB_POOL_SIZE });
  const redis = connectRedis(config.REDIS_URL, { failFast: true, liveness: redisLiveness(config.HERMES_REDIS_TIMEOUT_SECONDS, log, 'producer') });
  const subscriber = connectRedis(config.REDIS_URL, { liveness: redisLiveness(config.HERMES_REDIS_TIMEOUT_SECONDS, log, 'subscriber') });
  const queues = openQueues(redis, config.HERMES_QUEUE_PREFIX);
  const metrics = createMetrics('gateway');
  const agents = new AgentCache(db, config.DATABASE_URL, { log, metrics });
  await agents.start();
  return {
    config, db, redis, subscriber, queues, agents, log, metrics,
    async close() {
      await agents.close();
      await queues.close();
      subscriber.disconnect();
      redis.disconnect();
      await db.close();
    },
  };
}
