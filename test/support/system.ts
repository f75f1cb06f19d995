// Builds in-process pieces of the system (worker, agents) on a test database and prefix.
import {
  AgentCache, connectRedis, createLogger, createMetrics, openDb, openQueues, publishRevision, sha256,
  type CompiledAgent, type Config, type Db, type Logger, type Metrics, type Queues,
} from '../../services/core/index.js';
import { EnvSecretResolver } from '../../services/agent/index.js';
import { startWorker, type RunningWorker } from '../../services/worker/index.js';
import type { Redis } from 'ioredis';

export interface TestRuntime {
  config: Config;
  db: Db;
  redis: Redis;
  queues: Queues;
  agents: AgentCache;
  log: Logger;
  metrics: Metrics;
  close(): Promise<void>;
}

export async function openTestRuntime(config: Config, component = 'test'): Promise<TestRuntime> {
  const log = createLogger(component, config.HERMES_LOG_LEVEL);
  const db = openDb(config.DATABASE_URL);
  const redis = connectRedis(config.REDIS_URL);
  const queues = openQueues(redis, config.HERMES_QUEUE_PREFIX);
  const agents = new AgentCache(db, config.DATABASE_URL);
  await agents.start();
  return {
    config, db, redis, queues, agents, log, metrics: createMetrics(component),
    async close() {
      await queues.close();
      await agents.close();
      await redis.quit().catch(() => undefined);
      await db.close();
    },
  };
}

export const testApiKey = 'test-key-0123456789';

export function testAgent(baseURL: string, overrides: Partial<CompiledAgent> = {}): CompiledAgent {
  return {
    apiVersion: 'hermes.dev/v1alpha1',
    agent: { namespace: 'default', name: 'demo' },
    profile: { namespace: 'default', name: 'default' },
    model: { provider: 'openai', model: 'gpt-test', baseURL, apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' } },
    persona: 'You are the test agent.',
    api: { enabled: true, keySha256: [sha256(testApiKey)] },
    busyPolicy: 'queue',
    ...overrides,
  };
}

export async function createTestAgent(rt: TestRuntime, baseURL: string, overrides: Partial<CompiledAgent> = {}): Promise<string> {
  const { agentId } = await publishRevision(rt.db, testAgent(baseURL, overrides));
  return agentId;
}

export async function startTestWorker(rt: TestRuntime, extra: { sweeper?: boolean } = {}): Promise<RunningWorker> {
  return startWorker({ ...rt, secrets: new EnvSecretResolver({ OPENAI_API_KEY: 'sk-test' }), ...extra });
}
