// hermes_http_requests_total by route pattern (not raw URL: bounded label values) and status.
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../core/index.js';

export function registerRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequests.inc({ route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) });
    done();
  });
}
