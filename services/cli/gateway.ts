import { Command } from 'commander';
import { ConfigError, checkEvictionPolicy, connectRedis, openQueues, redisLiveness, registerInstance } from '../core/index.js';
import { startGateway, type RunningGateway } from '../gateway/index.js';
import type { SecretResolver } from '../agent/index.js';
import { openRuntime, onShutdown, type Runtime } from './runtime.js';
import { openSecrets } from './secrets.js';

/**
 * Starts a gateway on a runtime's database, agent cache, logger and metrics, with its own Redis
 * connections: a fail-fast producer (Redis trouble never stalls a request: the admission is
 * already committed and the sweeper re-enqueues) and a subscriber for turn events.
 */
export async function startGatewayOn(rt: Runtime, secrets?: SecretResolver): Promise<RunningGateway> {
  const silence = rt.config.HERMES_REDIS_TIMEOUT_SECONDS;
  const producer = connectRedis(rt.config.REDIS_URL, { failFast: true, liveness: redisLiveness(silence, rt.log, 'producer') });
  const subscriber = connectRedis(rt.config.REDIS_URL, { liveness: redisLiveness(silence, rt.log, 'subscriber') });
  const queues = openQueues(producer, rt.config.HERMES_QUEUE_PREFIX);
  // Checked once Redis answers, never awaited: a gateway started while Redis is down listens at
  // once (/healthz 200, /readyz 503 naming Redis) instead of opening no port until Redis is back.
  void checkEvictionPolicy(rt.redis).then((warning) => { if (warning) rt.log.warn(warning); });
  const gw = await startGateway({ ...rt, redis: producer, subscriber, queues, ...(secrets ? { secrets } : {}) });
  return {
    url: gw.url,
    ...(gw.metricsUrl ? { metricsUrl: gw.metricsUrl } : {}),
    async close() {
      await gw.close();
      await queues.close();
      subscriber.disconnect();
      producer.disconnect();
    },
  };
}

export const gatewayCommand = new Command('gateway')
  .description('Run the gateway: HTTP API, OpenAI-compatible endpoint, platform webhooks (what the gateway Deployment runs).')
  .action(async () => {
    const rt = await openRuntime('gateway');
    await registerInstance(rt.db.pool, 'gateway');
    // Platform signing secrets (Slack) are read by reference in each Agent's namespace, like the
    // worker's (ADR 0001). Without a usable source the HTTP API still serves; webhooks answer 503.
    const secrets = await openSecrets(rt.config, { defaultSource: 'kubernetes' }).catch((err: unknown) => {
      if (!(err instanceof ConfigError)) throw err;
      rt.log.warn({ reason: err.message }, 'Platform webhooks are off: no secret source');
      return undefined;
    });
    const gw = await startGatewayOn(rt, secrets);
    rt.log.info({ url: gw.url, metricsUrl: gw.metricsUrl ?? `${gw.url}/metrics` }, 'Gateway listening');
    onShutdown(rt.log, async () => {
      await gw.close();
      await rt.close();
    });
  });
