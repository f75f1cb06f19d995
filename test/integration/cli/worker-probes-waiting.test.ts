// `hermes worker` started while Postgres and Redis are down (a cluster coming up, an outage): it
// waits for Redis — and its probe port answers meanwhile, as a Pod's probes need: /healthz 200
// (the process is alive), /readyz 503 naming Postgres and Redis as not reachable (Redis used to be
// 'no answer within 1500 ms': the PING waited in the connection's queue).
// It used to wait on Redis before binding the port, so the kubelet's probes met a closed port and
// restarted the Pod in a loop with nothing in its events to say why; and a refused Postgres was
// answered only as "failed".
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hermesBin } from '../../support/cli.js';
import { freePort } from '../../support/ports.js';
import { privateRedis, type PrivateRedis } from '../../support/redis-server.js';
import { eventually } from '../../support/services.js';

let redis: PrivateRedis; // never started: nothing listens on its port

beforeAll(async () => { redis = await privateRedis(); });
afterAll(async () => { await redis.cleanup(); });

describe('hermes worker with Postgres and Redis down at start', () => {
  it('serves /healthz 200 and /readyz 503 saying what is not reachable while it waits', async () => {
    const [port, pgPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, [hermesBin, 'worker'], {
      env: { PATH: process.env.PATH, DATABASE_URL: `postgresql://hermes:s3cret@127.0.0.1:${pgPort}/hermes`, REDIS_URL: redis.url, HERMES_WORKER_PORT: String(port), HERMES_HOST: '127.0.0.1', HERMES_LOG_LEVEL: 'warn', HERMES_SECRETS_SOURCE: 'local' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let exited: number | null | undefined;
    child.once('exit', (code) => { exited = code; });
    try {
      const live = await eventually(async () => {
        if (exited !== undefined) throw new Error(`hermes worker exited ${exited} instead of waiting`);
        return (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200;
      }, 'the worker answering /healthz', 40_000);
      expect(live).toBe(true);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      const body = await ready.json() as { status: string; checks: Record<string, { ok: boolean; error?: string }> };
      expect(body.status).toBe('unready');
      expect(body.checks.postgres).toEqual({ ok: false, error: 'not reachable (the cause is in the process log)' });
      expect(body.checks.redis).toEqual({ ok: false, error: 'not reachable (the cause is in the process log)' });
      expect(JSON.stringify(body)).not.toMatch(/s3cret|127\.0\.0\.1/);
      expect(exited).toBeUndefined();
    } finally {
      child.kill('SIGKILL');
      if (exited === undefined) await new Promise((r) => child.once('exit', r));
    }
  });
});
