// The signed webhook from the outside, computed independently of the gateway's code: request
// headers signed as the docs say (HMAC-SHA256 over "<timestamp>.<payload>"), and a callback
// receiver that records every reply POSTed to it, whether its signature checks out, and can
// answer 429 with Retry-After.
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export function webhookSignedHeaders(secret: string, payload: string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-hermes-timestamp': String(timestamp),
    'x-hermes-signature': `sha256=${createHmac('sha256', secret).update(`${timestamp}.${payload}`).digest('hex')}`,
  };
}

export interface CallbackCall {
  body: { type: string; event_id: string; admission_id: string; user: string; conversation?: string; text: string };
  idempotencyKey: string | undefined;
  /** The signature verified with the secret, and the timestamp is within 300 s. */
  signed: boolean;
  status: number;
}

export interface WebhookReceiver {
  url: string;
  calls: CallbackCall[];
  rateLimitNext(times: number, retryAfterSeconds: number): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const calls: CallbackCall[] = [];
  let limited = { times: 0, retryAfter: 1 };
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(parts).toString('utf8');
      const ts = String(req.headers['x-hermes-timestamp'] ?? '');
      const expected = `sha256=${createHmac('sha256', secret).update(`${ts}.${raw}`).digest('hex')}`;
      const signed = req.headers['x-hermes-signature'] === expected && Math.abs(Date.now() / 1000 - Number(ts)) <= 300;
      const status = limited.times > 0 ? 429 : signed ? 204 : 401;
      if (status === 429) limited.times--;
      calls.push({ body: JSON.parse(raw) as CallbackCall['body'], idempotencyKey: req.headers['idempotency-key'] as string | undefined, signed, status });
      res.writeHead(status, status === 429 ? { 'retry-after': String(limited.retryAfter) } : {}).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hermes-replies`,
    calls,
    rateLimitNext: (times, retryAfterSeconds) => { limited = { times, retryAfter: retryAfterSeconds }; },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
