// The signed webhook's reply callback against a receiver over HTTP: what its answers mean to the
// ledger — 429 waits (RateLimited), 410 says the endpoint is gone for good (Undeliverable: the
// reply is abandoned at once), and any other refusal, 404 included (a receiver being redeployed),
// is an ordinary failure that the ledger retries.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimited, Undeliverable, webhook } from '../../../services/platforms/index.js';

let server: Server;
let url: string;
const seen: { path: string; key: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', key: req.headers['idempotency-key'] as string | undefined });
    req.resume();
    const status = Number(/^\/status\/(\d{3})$/.exec(req.url ?? '')?.[1] ?? 200);
    res.writeHead(status, status === 429 ? { 'retry-after': '9' } : {}).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => { await new Promise((r) => server?.close(r)); });

const reply = (status: number) => webhook.postWebhookReply(
  { url: `${url}/status/${status}`, secret: 'whsec-test' },
  { obligationId: `ob-${status}`, admissionId: 'adm-1', target: { kind: 'webhook', user: 'u1', eventId: 'e1' }, text: 'an answer' },
  new AbortController().signal,
);

describe('postWebhookReply', () => {
  it('a 2xx delivers; the receiver gets the obligation id as Idempotency-Key', async () => {
    await expect(reply(204)).resolves.toBeUndefined();
    expect(seen.at(-1)).toEqual({ path: '/status/204', key: 'ob-204' });
  });

  it('410 is Undeliverable (gone for good); 404 and 500 are ordinary failures; 429 is RateLimited', async () => {
    await expect(reply(410)).rejects.toBeInstanceOf(Undeliverable);
    for (const status of [404, 500]) {
      const err = await reply(status).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(Undeliverable);
      expect((err as Error).message).toMatch(`answered HTTP ${status}`);
    }
    const limited = await reply(429).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimited);
    expect((limited as RateLimited).retryAfterSeconds).toBe(9);
  });
});
