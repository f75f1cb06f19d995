// `hermes gateway` started while Redis is down waits for it (its commands queue) — and says so in
// its JSON log, once per connection, naming host and port, then that Redis answers again once it
// does. It used to wait in silence: no log line, no listener, nothing for an operator to go on.
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
});
