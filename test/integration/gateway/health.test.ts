// Probes and metrics: /healthz, /readyz (naming what failed), /metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, openQueues } from '../../../services/core/index.js';
import { buildGatewayApp } from '../../../services/gateway/index.js';
import { openHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => { h = await openHarness(); });
afterAll(async () => { await h?.close(); });

describe('probes', () => {
  it('answers /healthz and, with Postgres and Redis up, /readyz', async () => {
    expect((await h.app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    // Hermes' API server's names for it, unauthenticated as there.
    for (const path of ['/health', '/v1/health']) expect((await h.app.inject(path)).json()).toEqual({ status: 'ok' });
    // Hermes' discovery document: its clients check these features before using the run API.
    expect((await h.app.inject('/v1/capabilities')).statusCode).toBe(401);
    const caps = await h.app.inject({ url: '/v1/capabilities', headers: { authorization: 'Bearer any-key' } });
    expect(caps.json()).toMatchObject({ object: 'hermes.api_server.capabilities', auth: { type: 'bearer', required: true }, features: { run_submission: true, run_status: true, run_events_sse: true, run_stop: true, run_approval_response: false } });
    // Every endpoint it names is served (the path's {run_id} as a run that does not exist: 404 from the route, not 'is not a route').
    for (const { method, path } of Object.values(caps.json().endpoints as Record<string, { method: string; path: string }>)) {
      const res = await h.app.inject({ method: method as 'GET', url: path.replace('{run_id}', 'run_missing'), headers: { authorization: 'Bearer any-key' } });
      expect([path, res.json()?.error?.code]).not.toEqual([path, 'HERMES_ROUTE_NOT_FOUND']);
    }
    const ready = await h.app.inject('/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'ready', checks: { postgres: { ok: true }, redis: { ok: true } } });
  });

  it('answers /readyz 503 naming Redis when Redis does not answer', async () => {
    const deadRedis = connectRedis('redis://127.0.0.1:1', { failFast: true });
    const deadSubscriber = connectRedis('redis://127.0.0.1:1');
    const queues = openQueues(deadRedis, h.config.HERMES_QUEUE_PREFIX);
    const app = buildGatewayApp({ ...h.deps, redis: deadRedis, subscriber: deadSubscriber, queues });
    try {
      const res = await app.inject('/readyz');
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: 'unready', checks: { postgres: { ok: true }, redis: { ok: false } } });
      expect(res.json().error.message).toContain('redis');
    } finally {
      await app.close();
      await queues.close();
      deadRedis.disconnect();
      deadSubscriber.disconnect();
    }
  });

  it('still admits while Redis is down: the answer does not wait for the enqueue', async () => {
    const deadRedis = connectRedis('redis://127.0.0.1:1', { failFast: true });
    const queues = openQueues(deadRedis, h.config.HERMES_QUEUE_PREFIX);
    const app = buildGatewayApp({ ...h.deps, redis: deadRedis, queues, subscriber: undefined });
    try {
      const res = await app.inject({ method: 'POST', url: '/v1/agents/default/demo/messages', headers: { authorization: 'Bearer test-key', 'content-type': 'application/json' }, payload: '{"content":"redis is down"}' });
      expect(res.statusCode).toBe(202);
      const row = await h.db.pool.query('SELECT state FROM admissions WHERE id = $1', [res.json().admissionId]);
      expect(row.rows[0].state).toBe('queued'); // the outbox sweeper will enqueue it
    } finally {
      await app.close();
      await queues.close();
      deadRedis.disconnect();
    }
  });

  it('exposes request counts by route on /metrics', async () => {
    await h.app.inject('/healthz');
    const res = await h.app.inject('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toMatch(/hermes_http_requests_total\{route="\/healthz",status="200"/);
  });
});
