// Probes and metrics: /healthz (the process answers), /readyz (Postgres and Redis answer within
// a short timeout; 503 names what failed), /metrics (Prometheus text).
import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from '../context.js';

interface CheckResult { ok: boolean; error?: string }

async function check(run: () => Promise<unknown>, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs); });
  try {
    await Promise.race([run(), late]);
    return { ok: true };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

export function registerHealthRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const { db, redis, metrics } = ctx.deps;
  const timeoutMs = ctx.deps.tuning?.readinessTimeoutMs ?? 1_500;

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const [postgres, redisCheck] = await Promise.all([
      check(() => db.pool.query('select 1'), timeoutMs),
      check(() => redis.ping(), timeoutMs),
    ]);
    const checks = { postgres, redis: redisCheck };
    const failed = Object.entries(checks).filter(([, c]) => !c.ok).map(([name, c]) => `${name} (${c.error})`);
    if (ctx.shutdown.aborted) failed.push('gateway (shutting down)');
    if (failed.length === 0) return { status: 'ready', checks };
    return reply.code(503).send({
      status: 'unready',
      checks,
      error: { code: 'HERMES_NOT_READY', message: `Not ready: ${failed.join(', ')} failed.` },
    });
  });

  app.get('/metrics', async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
