// The worker's own small HTTP server on HERMES_WORKER_PORT, so a worker Deployment gets what a
// gateway has: /healthz (liveness: the event loop answers), /readyz (Postgres and Redis answer and
// the worker is not shutting down; 503 names what failed, the cause goes to the log) and /metrics —
// the turn, model-call, token, cost and tool counters live in the worker process and are scraped
// here, or on HERMES_METRICS_PORT when set, behind HERMES_METRICS_TOKEN when set.
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import {
  listeningUrl, readiness, registerMetricsRoute, startMetricsServer,
  type Config, type Db, type Logger, type Metrics, type MetricsServer,
} from '../core/index.js';
import type { Redis } from 'ioredis';

export interface ProbeDeps {
  config: Config;
  db: Db;
  redis: Redis;
  metrics: Metrics;
  log: Logger;
}

export interface RunningProbes {
  /** e.g. `http://127.0.0.1:8081`. */
  url: string;
  /** Where /metrics is served when HERMES_METRICS_PORT is set. */
  metricsUrl?: string;
  /** From now on /readyz answers 503 "shutting down" (called first on SIGTERM). */
  draining(): void;
  close(): Promise<void>;
}

export async function startWorkerProbes(deps: ProbeDeps, opts: { readinessTimeoutMs?: number } = {}): Promise<RunningProbes> {
  let stopping = false;
  const { config } = deps;
  const log = deps.log.child({ subsystem: 'worker-probes' });
  const app = Fastify({ loggerInstance: log, logController: new LogController({ disableRequestLogging: true }) }) as unknown as FastifyInstance;
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const r = await readiness({ ...deps, log }, opts.readinessTimeoutMs ?? 1_500, stopping ? { worker: { ok: false, error: 'shutting down' } } : {});
    if (r.ready) return { status: 'ready', checks: r.checks };
    return reply.code(503).send({ status: 'unready', checks: r.checks, error: { code: 'HERMES_NOT_READY', message: `Not ready: ${r.failed.join(', ')} failed.` } });
  });
  if (config.HERMES_METRICS_PORT === undefined) registerMetricsRoute(app, deps.metrics.registry, config.HERMES_METRICS_TOKEN);
  await app.listen({ host: config.HERMES_HOST, port: config.HERMES_WORKER_PORT });
  let metrics: MetricsServer | undefined;
  try {
    if (config.HERMES_METRICS_PORT !== undefined) {
      metrics = await startMetricsServer({ registry: deps.metrics.registry, host: config.HERMES_HOST, port: config.HERMES_METRICS_PORT, token: config.HERMES_METRICS_TOKEN, log });
    }
  } catch (err) {
    await app.close();
    throw err;
  }
  return {
    url: listeningUrl(app.server, config.HERMES_HOST, config.HERMES_WORKER_PORT),
    ...(metrics ? { metricsUrl: metrics.url } : {}),
    draining: () => { stopping = true; },
    close: async () => {
      await metrics?.close();
      await app.close();
    },
  };
}
