// The message API as a client uses it in end-to-end tests: post a message, follow an admission's
// SSE stream, wait for its reply.
import { expect } from 'vitest';
import { eventually } from './services.js';
import { sseFrames } from './sse.js';

export interface Posted { admissionId: string; sessionId: string; links: { self: string; events: string } }

export interface StreamEvent { event: string; data: Record<string, unknown> }

export interface Followed {
  events: StreamEvent[];
  /** Settles when the stream delivered its reply or error. */
  done: Promise<StreamEvent[]>;
  /** Resolves once an event of this name arrived. */
  until(event: string): Promise<void>;
}

export interface MessageApi {
  post(agent: string, content: string, user?: string): Promise<Posted>;
  follow(p: Posted): Followed;
  replyOf(p: Posted): Promise<string>;
}

/** A client of `gatewayUrl` with these headers (the bearer key), for agents of `namespace`. */
export function messageApi(gatewayUrl: () => string, headers: Record<string, string>, namespace = 'default'): MessageApi {
  return {
    async post(agent, content, user) {
      const res = await fetch(`${gatewayUrl()}/v1/agents/${namespace}/${agent}/messages`, { method: 'POST', headers, body: JSON.stringify({ content, ...(user ? { user: { id: user } } : {}) }) });
      expect(res.status).toBe(202);
      return (await res.json()) as Posted;
    },
    follow(p) {
      const events: StreamEvent[] = [];
      const waiters: { test: (e: string) => boolean; resolve: () => void }[] = [];
      const done = (async () => {
        const res = await fetch(`${gatewayUrl()}${p.links.events}`, { headers });
        for await (const { event, data } of sseFrames(res.body!)) {
          if (!event || !data) continue;
          events.push({ event, data: JSON.parse(data) as Record<string, unknown> });
          for (const w of waiters.filter((x) => x.test(event))) w.resolve();
          if (event === 'reply' || event === 'error') break;
        }
        return events;
      })();
      const until = (event: string) => events.some((e) => e.event === event) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ test: (e) => e === event, resolve }));
      return { events, done, until };
    },
    replyOf(p) {
      return eventually(async () => {
        const r = await fetch(`${gatewayUrl()}${p.links.self}`, { headers });
        const a = (await r.json()) as { state: string; reply: { content: string } | null };
        return a.state === 'terminal' ? a.reply?.content : undefined;
      }, `the reply of ${p.admissionId}`);
    },
  };
}
