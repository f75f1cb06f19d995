// Loopback ports for the servers tests start (Postgres, Redis, etcd, kube-apiserver, gateways,
// workers): free a moment ago and, unlike the kernel's port 0, outside Linux's ephemeral range.
// A port the kernel hands to `listen(0)` comes from the same range it hands to every outgoing
// connection, so between the probe and the server's own bind any of the suite's thousands of
// client sockets (a pg pool, an HTTP request) can take it for its local end, and the server
// exits with "address already in use" — the kube-apiserver of a clean-clone CI run did exactly
// that. Above hack/ports.sh's per-checkout block (20000–29999), below the ephemeral range, no
// client socket ever holds one; the random pick plus a bind probe keeps concurrent test files apart.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const lowest = 30_000;
const handedOut = new Set<number>();

/** The first port of the kernel's ephemeral range (32768 when it cannot be read). */
const ephemeralStart = ((): number => {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 0 ? first : 32_768;
  } catch {
    return 32_768;
  }
})();

/** Binds 127.0.0.1:`port` (0: any) and releases it: the port bound, or undefined when it was taken. */
function probe(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(undefined) : reject(err)));
    s.listen(port, '127.0.0.1', () => {
      const address = s.address();
      const bound = typeof address === 'object' && address ? address.port : undefined;
      s.close(() => resolve(bound));
    });
  });
}

/** The first of `candidates` that nothing listens on (probed by binding it), or undefined. */
export async function firstFree(candidates: Iterable<number>): Promise<number | undefined> {
  for (const port of candidates) if (await probe(port) === port) return port;
  return undefined;
}

/** Up to 200 random ports of [lowest, ephemeral start) that this process has not handed out. */
function* randomCandidates(): Generator<number> {
  const span = ephemeralStart - lowest;
  if (span < 100) return;
  for (let i = 0; i < 200; i++) {
    const port = lowest + Math.floor(Math.random() * span);
    if (!handedOut.has(port)) yield port;
  }
}

/**
 * A loopback TCP port that was free a moment ago, below the ephemeral range, never handed out
 * twice by one process (its server may not have bound it yet). Falls back to the kernel's choice
 * only when the range leaves no room.
 */
export async function freePort(): Promise<number> {
  const port = await firstFree(randomCandidates()) ?? await probe(0);
  if (port === undefined) throw new Error('no free loopback port');
  handedOut.add(port);
  return port;
}
