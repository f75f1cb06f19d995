// `hermes worker` told to stop while Redis is down stops. BullMQ's polite close marks each finished
// job in Redis and QUITs its connections, and with Redis gone both waited in ioredis' offline queue
// for as long as the outage lasted: 'Stopping worker', then nothing, until the kubelet's SIGKILL.
// Now, with Redis down, the worker waits for its own turns (they settle in Postgres), then closes
// its queue consumers without waiting for Redis; a job's bookkeeping there is left to BullMQ's
// stalled-job check, and the ledger makes a job delivered again a no-op.
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
  await redis.start();
});
afterAll(async () => {
  await redis.cleanup();
  await db.drop();
});

describe('hermes worker with Redis gone', () => {
  it('stops on SIGTERM while Redis is down, logging that it stopped', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [hermesBin, 'worker'], {
      env: { PATH: process.env.PATH, DATABASE_URL: db.url, REDIS_URL: redis.url, HERMES_WORKER_PORT: String(port), HERMES_HOST: '127.0.0.1', HERMES_LOG_LEVEL: 'info', HERMES_SECRETS_SOURCE: 'local' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { out += c.toString(); });
    let exited: number | null | undefined;
    child.once('exit', (code) => { exited = code; });
    try {
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 'the worker ready', 60_000);
      // Started, not only probed: /readyz answers before the worker's consumers are up, and a worker
      // SIGTERMed while it still starts has no stop handler yet (a loaded clean-clone run saw it die
      // by the signal, exit code null). This test is about a started worker.
      await eventually(() => out.includes('"msg":"Worker probes and metrics listening"'), 'the worker started', 60_000);
      await redis.stop();
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 503, 'the worker unready without Redis', 30_000);
      child.kill('SIGTERM');
      await eventually(() => exited !== undefined, 'the worker exited on SIGTERM', 30_000);
      expect(exited).toBe(0);
      expect(out).toContain('"msg":"Stopped worker"');
    } finally {
      if (exited === undefined) {
        child.kill('SIGKILL');
        await new Promise((r) => child.once('exit', r));
      }
    }
  });
});
