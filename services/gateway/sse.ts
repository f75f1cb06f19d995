// Server-sent events on a hijacked fastify reply: headers at once, `event:`/`data:` frames,
// a comment line as heartbeat (keeps proxies from timing the stream out), and the request's
// AbortSignal that fires when the client goes away (armed when the request arrived).
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface SseOptions {
  /** Heartbeat comment interval. @defaultValue 15000 */
  heartbeatMs?: number;
  headers?: Record<string, string>;
}

export interface SseStream {
  /** Aborted when the client disconnects (the request's `clientGone`). */
  readonly clientGone: AbortSignal;
  /** One frame: `event: <name>` (when given) and `data: <json or string>`. */
  send(data: unknown, event?: string): void;
  /** Ends the response; with `dropConnection`, also the socket (used while shutting down). */
  end(dropConnection?: boolean): void;
}

const sseHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no', // nginx: do not buffer the stream
};

/**
 * HEAD on an event stream: its headers, answered at once. Following the turn for a response that
 * has no body held the connection (and a wait slot) until the turn ended, so a keep-alive
 * client's next request on it waited that long.
 */
export const sseHead = (reply: FastifyReply): FastifyReply => reply.code(200).headers(sseHeaders).send();

export function openSse(request: FastifyRequest, reply: FastifyReply, opts: SseOptions = {}): SseStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { ...sseHeaders, ...opts.headers });
  res.flushHeaders();
  const heartbeat = setInterval(() => { if (!res.writableEnded) res.write(': keep-alive\n\n'); }, opts.heartbeatMs ?? 15_000);
  heartbeat.unref();
  res.once('close', () => clearInterval(heartbeat));
  if (res.destroyed) clearInterval(heartbeat);
  return {
    clientGone: request.clientGone,
    send(data, event) {
      if (res.writableEnded || res.destroyed) return;
      const body = typeof data === 'string' ? data : JSON.stringify(data);
      res.write(`${event ? `event: ${event}\n` : ''}data: ${body}\n\n`);
    },
    end(dropConnection = false) {
      clearInterval(heartbeat);
      if (res.writableEnded) return;
      const socket = res.socket; // detached from `res` once the response finishes
      res.end(() => { if (dropConnection) socket?.destroy(); });
    },
  };
}
