// Listening: the app on HERMES_HOST:HERMES_PORT (port 0 picks a free one), and /metrics on
// HERMES_HOST:HERMES_METRICS_PORT when that is set.
import { listeningUrl, startMetricsServer, type MetricsServer } from '../core/index.js';
import { buildGatewayApp } from './app.js';
import type { GatewayDeps } from './deps.js';

export interface RunningGateway {
  /** e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** Where /metrics is served when HERMES_METRICS_PORT is set. */
  metricsUrl?: string;
  /** Stops accepting, ends SSE streams and waits, unsubscribes. Leaves `deps` open. */
  close(): Promise<void>;
}

export async function startGateway(deps: GatewayDeps): Promise<RunningGateway> {
  const { config } = deps;
  const app = buildGatewayApp(deps);
  await app.listen({ host: config.HERMES_HOST, port: config.HERMES_PORT });
  let metrics: MetricsServer | undefined;
  try {
    if (config.HERMES_METRICS_PORT !== undefined) {
      metrics = await startMetricsServer({ registry: deps.metrics.registry, host: config.HERMES_HOST, port: config.HERMES_METRICS_PORT, token: config.HERMES_METRICS_TOKEN, log: deps.log });
    }
  } catch (err) {
    await app.close();
    throw err;
  }
  return {
    url: listeningUrl(app.server, config.HERMES_HOST, config.HERMES_PORT),
    ...(metrics ? { metricsUrl: metrics.url } : {}),
    async close() {
      await metrics?.close();
      await app.close();
    },
  };
}
