// /metrics of the gateway and of the worker's probe server: open on the main port by default,
// behind a bearer token with HERMES_METRICS_TOKEN, on its own listener with HERMES_METRICS_PORT.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { connectRedis, createLogger, createMetrics, openDb, type Config, type Db } from '../../../services/core/index.js';
import { startGateway } from '../../../services/gateway/index.js';
import { startWorkerProbes } from '../../../services/worker/index.js';
import type { Redis } from 'ioredis';
import { openHarness, type Harness } from '../gateway/harness.js';
import { testConfig } from '../../support/services.js';

const token = 'metrics-token-0123456789';
let h: Harness;
let db: Db;
let redis: Redis;
beforeAll(async () => {
  h = await openHarness();
  db = openDb(h.config.DATABASE_URL);
  redis = connectRedis(h.config.REDIS_URL);
});
afterAll(async () => {
  redis?.disconnect();
  await db?.close();
  await h?.close();
});

const get = async (url: string, headers: Record<string, string> = {}) => {
  const res = await request(url, { headers });
  return { status: res.statusCode, body: await res.body.text() };
};
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/** The gateway and the worker probe server, each started on `config`; returns the URL serving /metrics and the main URL. */
const servers: [string, (config: Config) => Promise<{ main: string; metrics: string; close(): Promise<void> }>][] = [
  ['gateway', async (config) => {
    const gw = await startGateway({ ...h.deps, config });
    return { main: gw.url, metrics: gw.metricsUrl ?? gw.url, close: () => gw.close() };
  }],
  ['worker probes', async (config) => {
    const p = await startWorkerProbes({ config, db, redis, log: createLogger('test', 'silent'), metrics: createMetrics('worker') });
    return { main: p.url, metrics: p.metricsUrl ?? p.url, close: () => p.close() };
  }],
];

describe.each(servers)('/metrics of the %s', (_name, start) => {
  const config = (extra: Partial<Record<keyof Config, unknown>>) =>
    testConfig(h.config.DATABASE_URL, { HERMES_HOST: '127.0.0.1', HERMES_PORT: 0, HERMES_WORKER_PORT: 0, ...extra });

  it('is open on the main port by default', async () => {
    const s = await start(config({}));
    try {
      expect((await get(`${s.main}/metrics`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('needs the bearer token when HERMES_METRICS_TOKEN is set', async () => {
    const s = await start(config({ HERMES_METRICS_TOKEN: token }));
    try {
      const none = await get(`${s.main}/metrics`);
      expect(none.status).toBe(401);
      expect(JSON.parse(none.body).error.code).toBe('HERMES_METRICS_UNAUTHENTICATED');
      expect((await get(`${s.main}/metrics`, bearer('wrong-token-0123456789'))).status).toBe(401);
      const ok = await get(`${s.main}/metrics`, bearer(token));
      expect(ok.status).toBe(200);
      expect(ok.body).toContain('process_cpu_user_seconds_total');
    } finally {
      await s.close();
    }
  });

  it('moves to its own listener with HERMES_METRICS_PORT', async () => {
    const s = await start(config({ HERMES_METRICS_PORT: 0, HERMES_METRICS_TOKEN: token }));
    try {
      expect(s.metrics).not.toBe(s.main);
      expect((await get(`${s.main}/metrics`, bearer(token))).status).toBe(404);
      expect((await get(`${s.metrics}/metrics`)).status).toBe(401);
      expect((await get(`${s.metrics}/metrics`, bearer(token))).status).toBe(200);
      expect((await get(`${s.metrics}/readyz`)).status).toBe(404);
    } finally {
      await s.close();
    }
  });
});

describe('log lines of a process part', () => {
  it('name the process component once; the part says subsystem (a repeated key is refused by log stores)', async () => {
    const lines: string[] = [];
    const log = createLogger('worker', 'info', { write: (line: string) => { lines.push(line); } });
    const config = testConfig(h.config.DATABASE_URL, { HERMES_HOST: '127.0.0.1', HERMES_WORKER_PORT: 0, HERMES_METRICS_PORT: 0 });
    const p = await startWorkerProbes({ config, db, redis, log, metrics: createMetrics('worker') });
    await p.close();
    // The probe server and its separate /metrics listener each announce where they listen.
    const listening = lines.filter((l) => l.includes('Server listening'));
    expect(listening).toHaveLength(2);
    for (const line of lines) expect(line.match(/"component":/g)).toHaveLength(1);
    expect(listening.map((l) => (JSON.parse(l) as { component: string; subsystem: string })).map(({ component, subsystem }) => `${component}/${subsystem}`).sort())
      .toEqual(['worker/metrics', 'worker/worker-probes']);
  });
});
