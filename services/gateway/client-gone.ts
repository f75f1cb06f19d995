// `request.clientGone`: aborted when the client goes away before its response is complete. It is
// armed as the request arrives (onRequest, before auth, body parsing, admission, subscribe or
// enqueue), so a client hanging up at any later moment is noticed: a listener attached only once
// a wait begins would miss a socket that closed during those awaits and leave a follower polling.
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Aborted when the client disconnects before the response finished. */
    clientGone: AbortSignal;
  }
}

export function registerClientGone(app: FastifyInstance): void {
  app.decorateRequest('clientGone', null as unknown as AbortSignal);
  app.addHook('onRequest', (request, reply, done) => {
    const gone = new AbortController();
    request.clientGone = gone.signal;
    const res = reply.raw;
    const socket = request.raw.socket as { destroyed?: boolean } | undefined;
    if (res.destroyed || socket?.destroyed) {
      gone.abort(new Error('client disconnected'));
      return done();
    }
    // 'close' on the response fires once it has finished, or when the socket closes first.
    res.once('close', () => { if (!res.writableFinished) gone.abort(new Error('client disconnected')); });
    done();
  });
}
