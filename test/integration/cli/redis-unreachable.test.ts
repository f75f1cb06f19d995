// `hermes gateway` started while Redis is down waits for it (its commands queue) — and says so in
// its JSON log, once per connection, naming host and port, then that Redis answers again once it
// does. It used to wait in silence: no log line, no listener, nothing for an operator to go on.
// Meanwhile it listens, as a Pod's probes need: /healthz 200, /readyz 503 saying Redis is not
// reachable (without its address). It used to open no port until Redis answered (the eviction
// policy check was awaited first), so the kubelet's liveness probe killed it without a reason.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hermesBin } from '../../support/cli.js';
import { freePort } from '../../support/ports.js';
import { privateRedis, type PrivateRedis } from '../../support/redis-server.js';
import { createTestDatabase, eventually, type TestDatabase } from '../../support/services.js';

let db: TestDatabase;
let redis: PrivateRedis;

beforeAll(async () => {
  db = await createTestDatabase();
  redis = await privateRedis();
});
afterAll(async () => {
  await redis.cleanup();
  await db.drop();
});

describe('hermes gateway with Redis down at start', () => {
  it('logs that Redis cannot be reached, then that it answers, and serves', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [hermesBin, 'gateway'], {
      env: { PATH: process.env.PATH, DATABASE_URL: db.url, REDIS_URL: redis.url, HERMES_PORT: String(port), HERMES_HOST: '127.0.0.1', HERMES_LOG_LEVEL: 'info', HERMES_CONNECTORS: 'off', HERMES_KANBAN_DISPATCH: 'off', HERMES_SECRETS_SOURCE: 'local' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { out += c.toString(); });
    const lines = () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; connection?: string; redis?: string });
    try {
      const down = await eventually(() => lines().find((l) => l.msg === 'Redis (REDIS_URL) cannot be reached; retrying until it answers'), 'the outage logged', 40_000);
      expect(down.redis).toBe(new URL(redis.url).host);
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200, 'the gateway live while Redis is down', 40_000);
      const unready = await fetch(`http://127.0.0.1:${port}/readyz`);
      const body = await unready.json() as { status: string; checks: Record<string, { ok: boolean; error?: string }> };
      expect([unready.status, body.status, body.checks]).toEqual([503, 'unready', { postgres: { ok: true }, redis: { ok: false, error: 'not reachable (the cause is in the process log)' } }]);
      expect(JSON.stringify(body)).not.toContain(new URL(redis.url).host);
      await redis.start();
      await eventually(() => lines().some((l) => l.msg === 'Redis answers again'), 'the recovery logged', 15_000);
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 'the gateway ready', 30_000);
      // One line per connection and outage, however long the retries go on.
      const said = lines().filter((l) => l.msg.startsWith('Redis (REDIS_URL)')).map((l) => l.connection);
      expect(new Set(said).size).toBe(said.length);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });

  it('stops on SIGTERM while Redis is still down', async () => {
    // Its QUIT used to wait in the offline queue for a Redis that never came: 'Shutting down', then
    // nothing, until the kubelet's SIGKILL.
    const port = await freePort();
    const child = spawn(process.execPath, [hermesBin, 'gateway'], {
      env: { PATH: process.env.PATH, DATABASE_URL: db.url, REDIS_URL: redis.url, HERMES_PORT: String(port), HERMES_HOST: '127.0.0.1', HERMES_LOG_LEVEL: 'warn', HERMES_CONNECTORS: 'off', HERMES_KANBAN_DISPATCH: 'off', HERMES_SECRETS_SOURCE: 'local' },
      stdio: 'ignore',
    });
    let exited: number | null | undefined;
    child.once('exit', (code) => { exited = code; });
    try {
      await redis.stop();
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200, 'the gateway live while Redis is down', 40_000);
      child.kill('SIGTERM');
      await eventually(() => exited !== undefined, 'the gateway exited on SIGTERM', 20_000);
      expect(exited).toBe(0);
    } finally {
      if (exited === undefined) {
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
      }
    }
  });
});
