// `hermes operator`'s HTTP endpoints, on one port like controller-runtime's probe address:
// /healthz (the process answers), /readyz (every watched cache has listed and is watching — not while
// the kube-apiserver cannot be reached — and Postgres answers;
// a follower is ready too — it keeps warm caches to take over), /metrics (Prometheus).
import Fastify, { LogController } from 'fastify';
import { checkWithin, listeningUrl, summarizeChecks, type Db, type Logger } from '../services/core/index.js';
import type { OperatorHandle } from './manager.js';
import type { OperatorMetrics } from './runtime/metrics.js';

export interface RunningOperatorProbes {
  url: string;
  close(): Promise<void>;
}

export async function startOperatorProbes(opts: { handle: OperatorHandle; db: Db; metrics: OperatorMetrics; log: Logger; host: string; port: number }): Promise<RunningOperatorProbes> {
  const app = Fastify({ loggerInstance: opts.log.child({ subsystem: 'operator-probes' }), logController: new LogController({ disableRequestLogging: true }) });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const caches = opts.handle.synced() ? { ok: true } : { ok: false, error: 'a watched cache has not listed yet, or its watch broke and is not watching again (the kube-apiserver cannot be reached?)' };
    const r = summarizeChecks({ caches, postgres: await checkWithin(() => opts.db.pool.query('select 1'), 1_500) });
    if (r.ready) return { status: 'ready', leader: opts.handle.isLeader(), checks: r.checks };
    return reply.code(503).send({ status: 'unready', leader: opts.handle.isLeader(), checks: r.checks, error: { code: 'HERMES_NOT_READY', message: `Not ready: ${r.failed.join(', ')} failed.` } });
  });
  app.get('/metrics', async (_request, reply) => {
    reply.type(opts.metrics.registry.contentType);
    return opts.metrics.registry.metrics();
  });
  await app.listen({ host: opts.host, port: opts.port });
  return { url: listeningUrl(app.server, opts.host, opts.port), close: () => app.close() };
}
