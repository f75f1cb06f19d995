// Slack's v0 request signing: `v0=` + hex HMAC-SHA256(signing secret, `v0:<timestamp>:<raw body>`)
// in X-Slack-Signature, the timestamp in X-Slack-Request-Timestamp. We refuse a timestamp more
// than 300 s away from our clock in either direction (replays, and forged future stamps that would
// stay "fresh" longer), compare in constant time, and hash the raw bytes as received — never a
// re-serialised body.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Verified } from '../adapter.js';

/** SPEC / Slack: requests older or newer than this are refused. */
export const SLACK_MAX_SKEW_SECONDS = 300;

export interface SlackSignatureHeaders {
  timestamp: string | string[] | undefined;
  signature: string | string[] | undefined;
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);

/** The freshness check alone: cheap, before any lookup. */
export function checkTimestamp(raw: string | string[] | undefined, nowSeconds: number): Verified & { seconds?: number } {
  const value = one(raw);
  if (value === undefined) return { ok: false, reason: 'the X-Slack-Request-Timestamp header is missing (or sent twice)' };
  if (!/^\d{1,12}$/.test(value)) return { ok: false, reason: 'X-Slack-Request-Timestamp is not a Unix time in seconds' };
  const seconds = Number(value);
  if (Math.abs(nowSeconds - seconds) > SLACK_MAX_SKEW_SECONDS) {
    return { ok: false, reason: `X-Slack-Request-Timestamp is more than ${SLACK_MAX_SKEW_SECONDS} s from the gateway's clock (a replay, or a clock out of sync)` };
  }
  return { ok: true, seconds };
}

export function slackSignature(secret: string, timestamp: string, body: Buffer | string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(body).digest('hex')}`;
}

/** Verifies a request; `nowSeconds` is the gateway's clock. */
export function verifySlackRequest(secret: string, headers: SlackSignatureHeaders, body: Buffer, nowSeconds: number): Verified {
  const fresh = checkTimestamp(headers.timestamp, nowSeconds);
  if (!fresh.ok) return fresh;
  const sent = one(headers.signature);
  if (sent === undefined) return { ok: false, reason: 'the X-Slack-Signature header is missing (or sent twice)' };
  const expected = Buffer.from(slackSignature(secret, one(headers.timestamp)!, body), 'utf8');
  const given = Buffer.from(sent, 'utf8');
  // Lengths are public (v0= + 64 hex); only equal-length buffers reach the constant-time compare.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'X-Slack-Signature does not match the body' };
  return { ok: true };
}
