// JSON logs (pino). Child loggers carry agent, session, admission and turn ids; the active
// OpenTelemetry span's ids are added to every line so logs and traces join up. `component` is the
// process's (gateway, worker, dev…), set once here: a part of a process names itself with
// `subsystem` (pino does not merge a child's keys with its parent's, so a second `component`
// would print the key twice, which log stores such as Elasticsearch refuse).
import { pino, type Logger } from 'pino';
import { trace } from '@opentelemetry/api';

export type { Logger };

/** `destination`: where lines go (stdout by default). */
export function createLogger(component: string, level = 'info', destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: { component },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin() {
      const ctx = trace.getActiveSpan()?.spanContext();
      return ctx ? { trace_id: ctx.traceId, span_id: ctx.spanId } : {};
    },
  }, destination);
}
