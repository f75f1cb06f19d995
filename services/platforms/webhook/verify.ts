// The signed webhook's request signing, for anything that can POST (CI, monitoring, scripts):
//   X-Hermes-Timestamp: <Unix seconds>
//   X-Hermes-Signature: sha256=<hex HMAC-SHA256(WEBHOOK_SECRET, "<timestamp>.<payload>")>
// where <payload> is the raw request body as sent (a POST), or the request path (a GET of a
// stored reply, which has no body). A timestamp more than WEBHOOK_MAX_SKEW_SECONDS away from the
// gateway's clock, in either direction, is refused; the compare is constant-time. Replies POSTed
// to the Agent's callbackUrl are signed the same way, so the receiver checks them with the same code.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Verified } from '../adapter.js';

/** Requests older or newer than this are refused. */
export const WEBHOOK_MAX_SKEW_SECONDS = 300;

export const WEBHOOK_HEADERS = { timestamp: 'x-hermes-timestamp', signature: 'x-hermes-signature' } as const;

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);

/** The freshness check alone: cheap, before any lookup. */
export function checkWebhookTimestamp(raw: string | string[] | undefined, nowSeconds: number): Verified {
  const value = one(raw);
  if (value === undefined) return { ok: false, reason: 'the X-Hermes-Timestamp header is missing (or sent twice)' };
  if (!/^\d{1,12}$/.test(value)) return { ok: false, reason: 'X-Hermes-Timestamp is not a Unix time in seconds' };
  if (Math.abs(nowSeconds - Number(value)) > WEBHOOK_MAX_SKEW_SECONDS) {
    return { ok: false, reason: `X-Hermes-Timestamp is more than ${WEBHOOK_MAX_SKEW_SECONDS} s from the gateway's clock (a replay, or a clock out of sync)` };
  }
  return { ok: true };
}

/** `sha256=<hex>` over `<timestamp>.<payload>`. */
export function webhookSignature(secret: string, timestamp: string, payload: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(payload).digest('hex')}`;
}

/** The headers of a request (or a callback) signed with `secret` at `nowSeconds`. */
export function signWebhook(secret: string, payload: Buffer | string, nowSeconds: number): Record<string, string> {
  const timestamp = String(nowSeconds);
  return { 'X-Hermes-Timestamp': timestamp, 'X-Hermes-Signature': webhookSignature(secret, timestamp, payload) };
}

export interface WebhookSignatureHeaders {
  timestamp: string | string[] | undefined;
  signature: string | string[] | undefined;
}

/** Verifies a request over `payload` (the raw body, or the path of a GET). */
export function verifyWebhookRequest(secret: string, headers: WebhookSignatureHeaders, payload: Buffer | string, nowSeconds: number): Verified {
  const fresh = checkWebhookTimestamp(headers.timestamp, nowSeconds);
  if (!fresh.ok) return fresh;
  const sent = one(headers.signature);
  if (sent === undefined) return { ok: false, reason: 'the X-Hermes-Signature header is missing (or sent twice)' };
  const expected = Buffer.from(webhookSignature(secret, one(headers.timestamp)!, payload), 'utf8');
  const given = Buffer.from(sent.toLowerCase(), 'utf8');
  // Lengths are public (sha256= + 64 hex); only equal-length buffers reach the constant-time compare.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'X-Hermes-Signature does not match the request' };
  return { ok: true };
}
