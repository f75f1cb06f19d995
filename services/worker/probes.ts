// The worker's own small HTTP server on HERMES_WORKER_PORT, so a worker Deployment gets what a
// gateway has: /healthz (liveness: the event loop answers), /readyz (Postgres and Redis answer and
// the worker is not shutting down; 503 names what failed) and /metrics — the turn, model-call,
// token, cost and tool counters live in the worker process and are scraped here.
import Fastify, { LogController } from 'fastify';
import { listeningUrl, readiness, type Config, type Db, type Logger, type Metrics } from '../core/index.js';
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
  /** From now on /readyz answers 503 "shutting down" (called first on SIGTERM). */
  draining(): void;
  close(): Promise<void>;
}

export async function startWorkerProbes(deps: ProbeDeps, opts: { readinessTimeoutMs?: number } = {}): Promise<RunningProbes> {
  let stopping = false;
  const app = Fastify({ loggerInstance: deps.log.child({ component: 'worker-probes' }), logController: new LogController({ disableRequestLogging: true }) });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const r = await readiness(deps, opts.readinessTimeoutMs ?? 1_500, stopping ? { worker: { ok: false, error: 'shutting down' } } : {});
    if (r.ready) return { status: 'ready', checks: r.checks };
    return reply.code(503).send({ status: 'unready', checks: r.checks, error: { code: 'HERMES_NOT_READY', message: `Not ready: ${r.failed.join(', ')} failed.` } });
  });
  app.get('/metrics', async (_request, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
  await app.listen({ host: deps.config.HERMES_HOST, port: deps.config.HERMES_WORKER_PORT });
  return {
    url: listeningUrl(app.server, deps.config.HERMES_HOST, deps.config.HERMES_WORKER_PORT),
    draining: () => { stopping = true; },
    close: () => app.close(),
  };
}
