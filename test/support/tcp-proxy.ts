// A loopback TCP proxy for fault injection: put it between one client and its server, then cut
// or freeze the path without touching the server. Modes:
//   forward — pipe each connection to the target (the default); held connections resume
//   reset   — accept and destroy at once (the client sees "connection terminated"); live pipes are cut
//   stall   — accept and hold without answering (a half-open path); live pipes stop forwarding
// `connections` counts every connection accepted, in any mode: how often a client tried.
// `strand()` leaves the connections open now half-open for good (their peer vanished without a
// word, as after a node or NAT failure) while new connections follow the mode.
import { createServer, connect, type Socket } from 'node:net';

export type ProxyMode = 'forward' | 'reset' | 'stall';

export interface TcpProxy {
  readonly port: number;
  /** Connections accepted since start (or since `resetCount()`). */
  readonly connections: number;
  /** Connections currently open on the client side (forwarded or held). */
  readonly open: number;
  mode: ProxyMode;
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  /** Every connection open now stops forwarding for ever; later mode changes do not revive them. */
  strand(): void;
  /**
   * Local ports of the server-side sockets of stranded connections: the server still sees those
   * connections open (its peer, this proxy, never closes them), e.g. as `client_port` in Postgres'
   * pg_stat_activity.
   */
  strandedPorts(): number[];
  resetCount(): void;
  close(): Promise<void>;
}

interface Pair { client: Socket; upstream?: Socket; stranded?: boolean }

export async function startTcpProxy(target: { host?: string; port: number }, initial: ProxyMode = 'forward'): Promise<TcpProxy> {
  let mode: ProxyMode = initial;
  let connections = 0;
  const live = new Set<Pair>();
  const forward = (pair: Pair) => {
    if (!pair.upstream) {
      const upstream = connect(target.port, target.host ?? '127.0.0.1');
      pair.upstream = upstream;
      upstream.on('error', () => pair.client.destroy());
      upstream.once('close', () => pair.client.destroy());
    }
    pair.client.pipe(pair.upstream);
    pair.upstream.pipe(pair.client);
    pair.client.resume();
    pair.upstream.resume();
  };
  const hold = (pair: Pair) => {
    pair.client.unpipe();
    pair.upstream?.unpipe();
    pair.client.pause();
    pair.upstream?.pause();
  };
  const server = createServer((client) => {
    connections++;
    client.on('error', () => undefined);
    if (mode === 'reset') return void client.destroy();
    const pair: Pair = { client };
    live.add(pair);
    client.once('close', () => { live.delete(pair); pair.upstream?.destroy(); });
    if (mode === 'forward') forward(pair);
    else hold(pair);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    get connections() { return connections; },
    get open() { return live.size; },
    get mode() { return mode; },
    set mode(next: ProxyMode) {
      mode = next;
      for (const pair of live) {
        if (pair.stranded) continue;
        if (next === 'reset') pair.client.destroy();
        else if (next === 'stall') hold(pair);
        else forward(pair);
      }
    },
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    strand() {
      for (const pair of live) {
        pair.stranded = true;
        hold(pair);
      }
    },
    strandedPorts: () => [...live].flatMap((p) => (p.stranded && p.upstream?.localPort !== undefined ? [p.upstream.localPort] : [])),
    resetCount: () => { connections = 0; },
    async close() {
      for (const pair of live) { pair.client.destroy(); pair.upstream?.destroy(); }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
