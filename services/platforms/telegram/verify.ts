// Telegram's webhook check: setWebhook's `secret_token` comes back in every update request as the
// X-Telegram-Bot-Api-Secret-Token header. There is no signature over the body, so the token is the
// whole proof; we compare SHA-256 digests of both values with timingSafeEqual, which takes the same
// time whatever the given token's length or content.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Verified } from '../adapter.js';

export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Checks the header against the agent's TELEGRAM_WEBHOOK_SECRET. */
export function verifyTelegramSecret(secret: string, header: string | string[] | undefined): Verified {
  if (header === undefined) return { ok: false, reason: 'the X-Telegram-Bot-Api-Secret-Token header is missing' };
  if (Array.isArray(header)) return { ok: false, reason: 'the X-Telegram-Bot-Api-Secret-Token header was sent twice' };
  if (!timingSafeEqual(digest(header), digest(secret))) return { ok: false, reason: 'X-Telegram-Bot-Api-Secret-Token does not match TELEGRAM_WEBHOOK_SECRET' };
  return { ok: true };
}
