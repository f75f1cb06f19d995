// JSON logs (pino). Child loggers carry agent, session, admission and turn ids; the active
// OpenTelemetry span's ids are added to every line so logs and traces join up.
import { pino, type Logger } from 'pino';
import { trace } from '@opentelemetry/api';

export type { Logger };

export function createLogger(component: string, level = 'info'): Logger {
  return pino({
    level,
    base: { component },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin() {
      const ctx = trace.getActiveSpan()?.spanContext();
      return ctx ? { trace_id: ctx.traceId, span_id: ctx.spanId } : {};
    },
  });
}
