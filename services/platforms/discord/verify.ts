// Discord's interaction signatures: Ed25519 over `X-Signature-Timestamp + raw body`, checked with
// the application's public key (DISCORD_PUBLIC_KEY, 64 hex characters) through the official
// `discord-interactions` verifyKey. Discord itself does not bound the timestamp; we do, as for
// Slack: a request more than 300 s away from our clock in either direction is refused (replays of
// a captured request, and forged future stamps that would stay "fresh" longer). The bytes checked
// are the raw body as received, never a re-serialised one.
import { verifyKey } from 'discord-interactions';
import type { Verified } from '../adapter.js';

/** Requests older or newer than this are refused. */
export const DISCORD_MAX_SKEW_SECONDS = 300;

export interface DiscordSignatureHeaders {
  timestamp: string | string[] | undefined;
  signature: string | string[] | undefined;
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? undefined : v);

/** The freshness check alone: cheap, before any lookup. */
export function checkDiscordTimestamp(raw: string | string[] | undefined, nowSeconds: number): Verified {
  const value = one(raw);
  if (value === undefined) return { ok: false, reason: 'the X-Signature-Timestamp header is missing (or sent twice)' };
  if (!/^\d{1,12}$/.test(value)) return { ok: false, reason: 'X-Signature-Timestamp is not a Unix time in seconds' };
  if (Math.abs(nowSeconds - Number(value)) > DISCORD_MAX_SKEW_SECONDS) {
    return { ok: false, reason: `X-Signature-Timestamp is more than ${DISCORD_MAX_SKEW_SECONDS} s from the gateway's clock (a replay, or a clock out of sync)` };
  }
  return { ok: true };
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const HEX_SIGNATURE = /^[0-9a-fA-F]{128}$/;

/** Whether `key` looks like an Ed25519 public key as the Developer Portal shows it. */
export const isDiscordPublicKey = (key: string) => HEX_KEY.test(key);

/** Verifies an interaction request; `nowSeconds` is the gateway's clock. */
export async function verifyDiscordRequest(publicKey: string, headers: DiscordSignatureHeaders, body: Buffer, nowSeconds: number): Promise<Verified> {
  const fresh = checkDiscordTimestamp(headers.timestamp, nowSeconds);
  if (!fresh.ok) return fresh;
  if (!isDiscordPublicKey(publicKey)) return { ok: false, reason: 'DISCORD_PUBLIC_KEY is not 64 hex characters (copy it from the application\'s General Information page)' };
  const signature = one(headers.signature);
  if (signature === undefined) return { ok: false, reason: 'the X-Signature-Ed25519 header is missing (or sent twice)' };
  if (!HEX_SIGNATURE.test(signature)) return { ok: false, reason: 'X-Signature-Ed25519 is not 128 hex characters' };
  // An Ed25519 verification: no secret is compared, so there is nothing to leak through timing.
  const valid = await verifyKey(body, signature, one(headers.timestamp)!, publicKey);
  return valid ? { ok: true } : { ok: false, reason: 'X-Signature-Ed25519 does not match the body' };
}
