// The API path's routes (/v1/responses, /v1/runs, /v1/sessions) when Postgres is unreachable:
// 503 (so a client retries), never a 2xx, nothing admitted — whether the agent lookup or the
// ledger statement fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentCache, openDb } from '../../../services/core/index.js';
import { buildGatewayApp } from '../../../services/gateway/index.js';
import { auth, openHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => { h = await openHarness(); });
afterAll(async () => { await h?.close(); });

const requests: [string, string, string | undefined][] = [
  ['POST', '/v1/responses', JSON.stringify({ model: 'default/demo', input: 'lost?' })],
  ['POST', '/v1/runs', JSON.stringify({ model: 'default/demo', input: 'lost?' })],
  ['GET', '/v1/runs/run_00000000000000000000000000000000', undefined],
  ['POST', '/v1/runs/run_00000000000000000000000000000000/stop', undefined],
  ['GET', '/v1/responses/resp_00000000000000000000000000000000', undefined],
  ['GET', '/v1/sessions', undefined],
];

describe('Postgres unavailable', () => {
  it.each(requests)('answers %s %s with 503 and admits nothing', async (method, url, payload) => {
    const deadUrl = 'postgresql://postgres@127.0.0.1:1/x';
    const dead = openDb(deadUrl);
    const deadAgents = new AgentCache(dead, deadUrl);
    const lookupFails = buildGatewayApp({ ...h.deps, db: dead, agents: deadAgents });
    const ledgerFails = buildGatewayApp({ ...h.deps, db: dead }); // the agent cache still reads the live database
    const before = (await h.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM admissions')).rows[0]!.n;
    try {
      for (const app of [lookupFails, ledgerFails]) {
        const res = await app.inject({ method: method as 'GET' | 'POST', url, headers: { ...auth(), ...(payload ? { 'content-type': 'application/json' } : {}) }, ...(payload ? { payload } : {}) });
        expect(res.statusCode).toBe(503);
        expect(res.json().error).toMatchObject({ code: 'HERMES_STORE_UNAVAILABLE', type: 'server_error' });
      }
    } finally {
      await lookupFails.close();
      await ledgerFails.close();
      await deadAgents.close();
      await dead.close();
    }
    expect((await h.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM admissions')).rows[0]!.n).toBe(before);
  });
});
