// One server span per request, continuing an incoming W3C `traceparent`. The span's context is
// kept on the request and made active for the handler (preHandler runs the rest of the chain
// inside `context.with`), so `injectTraceContext()` in admit, logs (trace_id) and child spans
// join it. The span ends when the response finishes or the socket closes, whichever is first.
import { SpanKind, SpanStatusCode, context, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { extractTraceContext, tracer } from '../core/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** OpenTelemetry context holding this request's server span. */
    otelContext: Context;
  }
}

const spans = new WeakMap<FastifyRequest, Span>();

function carrier(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['traceparent', 'tracestate']) {
    const v = request.headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  return out;
}

function endSpan(request: FastifyRequest, status: number): void {
  const span = spans.get(request);
  if (!span) return;
  spans.delete(request);
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

export function registerTracing(app: FastifyInstance): void {
  app.decorateRequest('otelContext', null as unknown as Context);
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const parent = extractTraceContext(carrier(request));
    const span = tracer().startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0] ?? '' },
    }, parent);
    spans.set(request, span);
    request.otelContext = trace.setSpan(parent, span);
    reply.raw.once('close', () => endSpan(request, reply.raw.statusCode));
    context.with(request.otelContext, done);
  });
  app.addHook('preHandler', (request, _reply, done) => context.with(request.otelContext, done));
  app.addHook('onResponse', (request, reply, done) => {
    endSpan(request, reply.statusCode);
    done();
  });
}
