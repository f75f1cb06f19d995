// Serving /metrics (Prometheus text): on a process's main HTTP server, or on a listener of its
// own (HERMES_METRICS_PORT), and behind a bearer token when HERMES_METRICS_TOKEN is set. Default:
// open, on the main port (what a Prometheus pod-annotation scrape expects).
import { createHash, timingSafeEqual } from 'node:crypto';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { HermesError, errorCatalogue } from './errors.js';
import { listeningUrl } from './health.js';
import type { Logger } from './logger.js';

const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i;
const digest = (s: string) => createHash('sha256').update(s).digest();

/** True when `header` is `Bearer <token>` (compared in constant time). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const sent = header ? bearer.exec(header)?.[1] : undefined;
  return sent !== undefined && timingSafeEqual(digest(sent), digest(token));
}

/** GET /metrics on `app`; with `token`, only for `Authorization: Bearer <token>`. */
export function registerMetricsRoute(app: FastifyInstance, registry: Registry, token: string | undefined): void {
  app.get('/metrics', async (request, reply) => {
    if (token !== undefined && !bearerMatches(request.headers.authorization, token)) {
      const e = new HermesError('HERMES_METRICS_UNAUTHENTICATED');
      return reply.code(e.status).header('www-authenticate', 'Bearer realm="metrics"').send({ error: { code: e.code, message: errorCatalogue[e.code].message } });
    }
    reply.type(registry.contentType);
    return registry.metrics();
  });
}

export interface MetricsServer {
  /** e.g. `http://127.0.0.1:9090`. */
  url: string;
  close(): Promise<void>;
}

/** A listener serving only /metrics (everything else 404). */
export async function startMetricsServer(opts: { registry: Registry; host: string; port: number; token: string | undefined; log: Logger }): Promise<MetricsServer> {
  const app = Fastify({ loggerInstance: opts.log.child({ subsystem: 'metrics' }), logController: new LogController({ disableRequestLogging: true }) }) as unknown as FastifyInstance;
  registerMetricsRoute(app, opts.registry, opts.token);
  await app.listen({ host: opts.host, port: opts.port });
  return { url: listeningUrl(app.server, opts.host, opts.port), close: () => app.close() };
}
