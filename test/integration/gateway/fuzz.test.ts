// A short seeded fuzz run on a real socket: malformed, oversized, control-character and random
// requests, authenticated and not. None may get a 5xx; the gateway answers /healthz afterwards.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { fuzzGateway } from '../../support/gateway-fuzz.js';
import { openHarness, testKey, type Harness } from './harness.js';

let h: Harness;
let gw: RunningGateway;
beforeAll(async () => {
  h = await openHarness({ HERMES_MAX_BODY_BYTES: 65_536 });
  gw = await startGateway(h.deps);
});
afterAll(async () => {
  await gw?.close();
  await h?.close();
});

it('answers 1 500 hostile requests without a single 5xx', async () => {
  const result = await fuzzGateway({ url: gw.url, key: testKey, agents: ['default/demo', 'default/other'], requests: 1_500, seed: 9, lanes: 12, timeoutMs: 1_000, maxBodyBytes: 70_000 });
  expect(result.serverErrors).toEqual([]);
  expect(Object.keys(result.statuses).filter((s) => s.startsWith('5'))).toEqual([]);
  expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
});
