// A signed webhook's body → one InboundEvent:
//   { "text": "…", "user": "ci-bot", "user_name"?: "CI", "conversation"?: "pr-123", "id"?: "…" }
// - `user` is who the sender says is speaking (the signature authenticates the sender, not the
//   user): the platform's allowlist, when set, lists the `user` values accepted.
// - without `conversation`: one session per user (a DM); with it: one per conversation and user
//   (a group, SPEC's default of a session per participant).
// - the dedupe id is the Idempotency-Key header, else `id`, else the request's signature (an exact
//   replay inside the 300 s window is then a duplicate too). Both given and different → 400.
// - no reply address in the body: replies go to the Agent's callbackUrl (or are only stored), so a
//   request cannot make the gateway POST anywhere (no SSRF).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { InboundEvent } from '../adapter.js';

// eslint-disable-next-line no-control-regex -- refusing control characters is the point
const shortText = z.string().min(1).max(256).regex(/^[^\u0000-\u001f\u007f]+$/, 'no control characters');

export const webhookBodySchema = z.object({
  // Bounded by the body (HERMES_MAX_BODY_BYTES) and then by HERMES_MAX_MESSAGE_CHARS (routes/webhook.ts),
  // so the 400 names the product's limit, not a 40 000 of its own.
  text: z.string().min(1),
  user: shortText,
  user_name: shortText.optional(),
  conversation: shortText.optional(),
  id: shortText.optional(),
}).strict();

export type WebhookBody = z.infer<typeof webhookBodySchema>;

export const idempotencyKeySchema = z.string().min(1).max(256).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

export interface WebhookTarget {
  kind: 'webhook';
  user: string;
  conversation?: string;
  eventId: string;
  [field: string]: unknown;
}

export type WebhookEventResult = { ok: true; event: InboundEvent } | { ok: false; detail: string };

/** The dedupe id of a request by its signature as verified (hex in any case: an exact replay re-cased is still the same request). */
export const signatureEventId = (signature: string) => `sig:${createHash('sha256').update(signature.toLowerCase()).digest('hex')}`;

/** The event of a verified body; `idempotencyKey` from the header, `signature` the request's. */
export function webhookEvent(body: WebhookBody, idempotencyKey: string | undefined, signature: string): WebhookEventResult {
  if (idempotencyKey !== undefined && body.id !== undefined && idempotencyKey !== body.id) {
    return { ok: false, detail: 'The Idempotency-Key header and the body\'s "id" differ: send one, or the same value in both.' };
  }
  const text = body.text.trim();
  if (!text) return { ok: false, detail: '"text" is blank.' };
  const eventId = idempotencyKey ?? body.id ?? signatureEventId(signature);
  const target: WebhookTarget = { kind: 'webhook', user: body.user, eventId, ...(body.conversation !== undefined ? { conversation: body.conversation } : {}) };
  return {
    ok: true,
    event: {
      platform: 'webhook',
      eventId,
      chat: body.conversation !== undefined ? { type: 'group', id: body.conversation } : { type: 'dm', id: body.user },
      user: { id: body.user, ...(body.user_name ? { name: body.user_name } : {}) },
      text,
      replyTarget: target,
    },
  };
}
