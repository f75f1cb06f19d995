// A private redis-server for tests that stop and restart Redis (the shared one must stay up).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './ports.js';

export interface PrivateRedis {
  url: string;
  /** Starts (or restarts) the server, empty: no persistence. */
  start(): Promise<void>;
  stop(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'hermes-redis-'));
  let proc: ChildProcess | undefined;
  const url = `redis://127.0.0.1:${port}`;
  const ping = async () => {
    const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => undefined);
    try {
      await c.connect();
      return (await c.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      c.disconnect();
    }
  };
  const stop = async () => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  };
  return {
    url,
    stop,
    async start() {
      proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'], { stdio: 'ignore' });
      for (let i = 0; i < 200 && !(await ping()); i++) await new Promise((r) => setTimeout(r, 25));
      if (!(await ping())) throw new Error(`redis-server did not start on ${url} (is redis-server installed? hack/services.sh installs it)`);
    },
    async cleanup() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
