// The test plane's ports (test/support/ports.ts): below the kernel's ephemeral range, so no client
// socket of the suite can take one between the probe and the server's bind; free when handed out,
// never handed out twice, and a port something listens on is never chosen.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { firstFree, freePort } from '../../support/ports.js';

const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
const held: Server[] = [];

afterAll(async () => {
  await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
});

const listen = (port: number): Promise<Server> => new Promise((resolve, reject) => {
  const s = createServer();
  s.once('error', reject);
  s.listen(port, '127.0.0.1', () => resolve(s));
});

describe('freePort', () => {
  it('hands out bindable ports above the checkouts\' block and below the ephemeral range, never one twice', async () => {
    // 300 draws from ~2 800 ports: without the memory of what was handed out, a repeat is all but certain.
    const ports: number[] = [];
    for (let i = 0; i < 300; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(30_000);
      expect(p).toBeLessThan(ephemeralStart);
    }
    for (const p of ports.slice(0, 20)) held.push(await listen(p)); // free: binding succeeds
  });

  it('never chooses a port a server listens on', async () => {
    // Ten of its own ports, nine of them listened on (ports of other files would race them).
    const ours: number[] = [];
    for (let i = 0; i < 10; i++) ours.push(await freePort());
    for (const p of ours.slice(0, 9)) held.push(await listen(p));
    expect(await firstFree(ours)).toBe(ours[9]);
    held.push(await listen(ours[9]!));
    expect(await firstFree(ours)).toBeUndefined();
  });
});
