// The MCP connections of one worker process, keyed by agent and server configuration (a new
// Profile revision that changes a server gets a new connection; the old one idles out). Bounded:
// past `max` the least recently used connection is closed; unused for `idleMs`, one is closed.
import { createHash } from 'node:crypto';
import type { McpConnection } from './connection.js';

export interface McpPoolOptions {
  /** @defaultValue 64 */
  max?: number;
  /** @defaultValue 600 000 (10 min) */
  idleMs?: number;
  now: () => number;
  /** How often idle connections are looked for. @defaultValue 60 000; 0 = only when the pool is used */
  sweepEveryMs?: number;
}

/** The pool key of `server` of an agent: the agent and the server's whole configuration. */
export function mcpPoolKey(agent: string, server: unknown): string {
  return `${agent}/${createHash('sha256').update(JSON.stringify(server)).digest('hex').slice(0, 24)}`;
}

export class McpPool {
  private readonly entries = new Map<string, { conn: McpConnection; usedAt: number }>();
  private readonly timer?: NodeJS.Timeout;

  constructor(private readonly o: McpPoolOptions) {
    const every = o.sweepEveryMs ?? 60_000;
    if (every > 0) {
      this.timer = setInterval(() => { void this.sweep(); }, every);
      this.timer.unref();
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** The connection for `key`, opened by `create` when there is none. */
  get(key: string, create: () => McpConnection): McpConnection {
    void this.sweep();
    const now = this.o.now();
    const hit = this.entries.get(key);
    if (hit) {
      hit.usedAt = now;
      this.entries.delete(key); // re-insert: Map order is the LRU order
      this.entries.set(key, hit);
      return hit.conn;
    }
    const conn = create();
    this.entries.set(key, { conn, usedAt: now });
    const max = this.o.max ?? 64;
    while (this.entries.size > max) {
      const [oldest, entry] = this.entries.entries().next().value as [string, { conn: McpConnection }];
      this.entries.delete(oldest);
      void entry.conn.close();
    }
    return conn;
  }

  /** Closes connections unused for `idleMs` (one with a call running is in use). */
  async sweep(): Promise<void> {
    const idle = this.o.idleMs ?? 600_000;
    const cutoff = this.o.now() - idle;
    const stale = [...this.entries].filter(([, e]) => e.conn.inFlight === 0 && Math.max(e.usedAt, e.conn.lastUsedAt) <= cutoff);
    for (const [key] of stale) this.entries.delete(key);
    await Promise.all(stale.map(([, e]) => e.conn.close()));
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => e.conn.close()));
  }
}
