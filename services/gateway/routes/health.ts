// Probes and metrics: /healthz (the process answers; Hermes' API server calls it /health and
// /v1/health, served too so its clients and monitors work unchanged), /readyz (Postgres and Redis answer within
// a short timeout; 503 names what failed, the cause is logged), /metrics (Prometheus text; here
// unless HERMES_METRICS_PORT moves it to its own listener, behind HERMES_METRICS_TOKEN when set).
import type { FastifyInstance } from 'fastify';
import { readiness, registerMetricsRoute } from '../../core/index.js';
import type { GatewayContext } from '../context.js';

export function registerHealthRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { config, metrics } = ctx.deps;
  const timeoutMs = ctx.deps.tuning?.readinessTimeoutMs ?? 1_500;

  for (const path of ['/healthz', '/health', '/v1/health']) app.get(path, async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const r = await readiness(ctx.deps, timeoutMs);
    if (ctx.shutdown.aborted) r.failed.push('gateway (shutting down)');
    if (r.failed.length === 0) return { status: 'ready', checks: r.checks };
    return reply.code(503).send({
      status: 'unready',
      checks: r.checks,
      error: { code: 'HERMES_NOT_READY', message: `Not ready: ${r.failed.join(', ')} failed.` },
    });
  });

  if (config.HERMES_METRICS_PORT === undefined) registerMetricsRoute(app, metrics.registry, config.HERMES_METRICS_TOKEN);
}
