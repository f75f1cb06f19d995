// OpenTelemetry: a tracer provider per process (spans get real ids even when nothing exports
// them, so trace context still flows), W3C propagation, and OTLP/HTTP export when configured.
// The context travels HTTP request → admission row/BullMQ job → worker turn → model call.
import { context, propagation, trace, type Context, type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { Config } from './config.js';

export type TraceCarrier = Record<string, string>;

let provider: NodeTracerProvider | undefined;

/** Installs the global tracer provider once. Extra processors are for tests (in-memory export). */
export function initTracing(component: string, config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_SERVICE_NAME'>, extra: SpanProcessor[] = []): void {
  if (provider) return;
  const processors: SpanProcessor[] = [...extra];
  const endpoint = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (config.OTEL_EXPORTER_OTLP_ENDPOINT ? `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/$/, '')}/v1/traces` : undefined);
  if (endpoint) processors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint })));
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.OTEL_SERVICE_NAME ?? `hermes-${component}` }),
    spanProcessors: processors,
  });
  provider.register();
}

export async function shutdownTracing(): Promise<void> {
  await provider?.shutdown();
  provider = undefined;
}

export function tracer(): Tracer {
  return trace.getTracer('hermes-operator');
}

/** The current context as W3C headers (traceparent, tracestate), for a row or a job. */
export function injectTraceContext(ctx: Context = context.active()): TraceCarrier {
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

export function extractTraceContext(carrier: TraceCarrier | null | undefined): Context {
  return propagation.extract(context.active(), carrier ?? {});
}

/** Runs `fn` inside a span that ends (with error status on throw) when `fn` settles. */
export async function inSpan<T>(name: string, attributes: Record<string, string | number>, parent: Context, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}
