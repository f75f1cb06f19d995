// What the gateway tells callers about its insides (L3, L1): the admission `error` field is a
// public reason, /readyz names a failed dependency without its address, and a client that
// aborts its upload is logged as a client abort, not as "ledger unavailable".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { connectRedis, errorCatalogue, openQueues } from '../../../services/core/index.js';
import { buildGatewayApp, startGateway } from '../../../services/gateway/index.js';
import { eventually } from '../../support/services.js';
import { auth, openHarness, runFakeTurn, testKey, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => { h = await openHarness(); });
afterAll(async () => { await h?.close(); });

const admitOne = async (conversation: string) =>
  (await h.app.inject({ method: 'POST', url: '/v1/agents/default/demo/messages', headers: { ...auth(), 'content-type': 'application/json' }, payload: JSON.stringify({ content: 'hi', conversation }) })).json();

describe('the admission error field', () => {
  it('is a catalogue code and message, never the internal reason kept on the admission', async () => {
    const failed = await admitOne('err-1');
    const internal = 'DatabaseError: password authentication failed for user "hermes" at 10.1.2.3:5432';
    await runFakeTurn(h, failed.admissionId, { result: { outcome: 'failed', reply: 'Something went wrong; try again.', error: internal } });
    const res = await h.app.inject({ method: 'GET', url: failed.links.self, headers: auth() });
    expect(res.json().error).toEqual({ code: 'HERMES_TURN_FAILED', message: errorCatalogue.HERMES_TURN_FAILED.message });
    expect(res.body).not.toContain('10.1.2.3');
    expect(res.body).not.toContain('DatabaseError');

    const died = await admitOne('err-2');
    await runFakeTurn(h, died.admissionId, { dies: true });
    const unknown = await h.app.inject({ method: 'GET', url: died.links.self, headers: auth() });
    expect(unknown.json()).toMatchObject({ state: 'unknown', error: { code: 'HERMES_TURN_INTERRUPTED', message: errorCatalogue.HERMES_TURN_INTERRUPTED.message } });
    expect(unknown.body).not.toContain('owner stopped');

    const fine = await admitOne('err-3');
    await runFakeTurn(h, fine.admissionId, { result: { outcome: 'completed', reply: 'ok' } });
    expect((await h.app.inject({ method: 'GET', url: fine.links.self, headers: auth() })).json().error).toBeNull();
  });
});

describe('/readyz', () => {
  it('names the failed dependency without its address or the driver’s text', async () => {
    const deadRedis = connectRedis('redis://127.0.0.1:1', { failFast: true });
    const queues = openQueues(deadRedis, h.config.HERMES_QUEUE_PREFIX);
    const app = buildGatewayApp({ ...h.deps, redis: deadRedis, subscriber: connectRedis('redis://127.0.0.1:1'), queues });
    try {
      const res = await app.inject('/readyz');
      expect(res.statusCode).toBe(503);
      expect(res.json().error.message).toContain('redis');
      expect(res.body).not.toMatch(/127\.0\.0\.1|:1\b|ECONNREFUSED|Stream isn't writeable/);
    } finally {
      await app.close();
      await queues.close();
      deadRedis.disconnect();
    }
  });
});

describe('a client aborting its upload (L1)', () => {
  it('is logged at info as a client abort, not as an unavailable ledger', async () => {
    const lines: { level: number; msg: string; code?: string }[] = [];
    const sink = new Writable({ write(chunk: Buffer, _enc, done) { for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l)); done(); } });
    const gw = await startGateway({ ...h.deps, log: pino({ level: 'info' }, sink) });
    try {
      const port = Number(new URL(gw.url).port);
      await new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.write(`POST /v1/agents/default/demo/messages HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${testKey}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"content": "cut sh`, () => {
            socket.destroy();
            resolve();
          });
        });
      });
      await eventually(() => lines.some((l) => l.msg === 'Client went away before the answer'), 'the client abort logged');
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
      expect(JSON.stringify(lines)).not.toContain('HERMES_STORE_UNAVAILABLE');
      expect(lines.find((l) => l.msg === 'Client went away before the answer')?.level).toBe(30);
    } finally {
      await gw.close();
    }
  });
});
