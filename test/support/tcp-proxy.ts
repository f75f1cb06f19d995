// A loopback TCP proxy for fault injection between a process and Postgres (or Redis):
//  - `freeze()`: every connection, open or new, stops forwarding (a partition): sockets stay up,
//    bytes are held; `resume()` heals it and delivers what was held, as TCP would after a partition;
//  - `strand()`: the connections open now become half-open for good (their peer is gone without a
//    word, as after a NAT or node failure) while new connections work;
//  - `cut()`: resets every connection and refuses new ones until `resume()` (a restart or outage).
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** `url` with its host:port replaced by the proxy's. */
  via(url: string): string;
  freeze(): void;
  strand(): void;
  cut(): void;
  resume(): void;
  /** Connections currently open through the proxy. */
  connections(): number;
  close(): Promise<void>;
}

interface Pair { client: Socket; upstream: Socket; stranded: boolean; held: { toUp: Buffer[]; toClient: Buffer[] } }

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let mode: 'open' | 'frozen' | 'cut' = 'open';
  const pairs = new Set<Pair>();
  const forward = (p: Pair, d: Buffer, to: 'toUp' | 'toClient') => {
    if (p.stranded) return; // a dead peer: bytes vanish
    if (mode !== 'open') return void p.held[to].push(d);
    (to === 'toUp' ? p.upstream : p.client).write(d);
  };
  const server: Server = createServer((client) => {
    if (mode === 'cut') return client.destroy();
    const upstream = connect(targetPort, targetHost);
    const pair: Pair = { client, upstream, stranded: false, held: { toUp: [], toClient: [] } };
    pairs.add(pair);
    const drop = () => { pairs.delete(pair); client.destroy(); upstream.destroy(); };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (d: Buffer) => forward(pair, d, 'toUp'));
    upstream.on('data', (d: Buffer) => forward(pair, d, 'toClient'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    freeze() { mode = 'frozen'; },
    strand() { for (const p of pairs) p.stranded = true; },
    cut() {
      mode = 'cut';
      for (const p of pairs) { p.client.resetAndDestroy(); p.upstream.destroy(); }
      pairs.clear();
    },
    resume() {
      mode = 'open';
      for (const p of pairs) {
        for (const d of p.held.toUp.splice(0)) p.upstream.write(d);
        for (const d of p.held.toClient.splice(0)) p.client.write(d);
      }
    },
    connections: () => pairs.size,
    async close() {
      for (const p of pairs) { p.client.destroy(); p.upstream.destroy(); }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
