// Replies of the signed webhook platform. The callback URL comes from the Agent spec (the
// platform's callbackUrl), never from a request. Each reply is one POST of
//   { "type": "reply", "event_id", "admission_id", "user", "conversation"?, "text" }
// and a CronJob's result (`deliver: webhook`) one POST of
//   { "type": "cron", "cron_job": "<namespace>/<name>", "admission_id", "text" }
// signed with the platform's WEBHOOK_SECRET exactly as inbound requests are (X-Hermes-Timestamp,
// X-Hermes-Signature), with `Idempotency-Key: <obligation id>` so the receiver can drop a re-send
// (a re-send after a crash also starts with the ledger's duplicate marker). Redirects are refused.
// A 429 is RateLimited (Retry-After honoured, no attempt spent); a 410 (the receiver says the
// endpoint is gone for good) is Undeliverable; other non-2xx answers fail the attempt.
import { z } from 'zod';
import { withDeadline } from '../../core/deadline.js';
import { RateLimited, Undeliverable } from '../adapter.js';
import { retryAfterSeconds } from '../teams/send.js';
import { signWebhook } from './verify.js';

export const webhookTargetSchema = z.object({ kind: z.literal('webhook'), user: z.string(), conversation: z.string().optional(), eventId: z.string() });
/** A CronJob's `deliver: webhook` (services/core/cron/deliver.ts): no request to answer, the CronJob named instead. */
const cronTargetSchema = z.object({ kind: z.literal('webhook'), cronJob: z.string() });

/** The callback's JSON for a reply to a request, or for a CronJob's result. */
function callbackBody(reply: WebhookReply): string {
  const cron = cronTargetSchema.safeParse(reply.target);
  if (cron.success) return JSON.stringify({ type: 'cron', cron_job: cron.data.cronJob, admission_id: reply.admissionId, text: reply.text });
  const t = webhookTargetSchema.parse(reply.target);
  return JSON.stringify({
    type: 'reply', event_id: t.eventId, admission_id: reply.admissionId, user: t.user, ...(t.conversation !== undefined ? { conversation: t.conversation } : {}), text: reply.text,
  });
}

export interface WebhookReply {
  /** The delivery obligation's id: the Idempotency-Key of the callback. */
  obligationId: string;
  admissionId: string;
  target: unknown;
  text: string;
}

export interface WebhookCallbackOptions {
  url: string;
  secret: string;
  /** Bound on one HTTP call. @defaultValue 30 000 */
  timeoutMs?: number;
  now?: () => number;
}

/** POSTs one reply to the callback URL; throws RateLimited or an Error naming the status. */
export async function postWebhookReply(opts: WebhookCallbackOptions, reply: WebhookReply, signal: AbortSignal): Promise<void> {
  const body = callbackBody(reply);
  const now = (opts.now ?? Date.now)();
  const deadline = withDeadline(signal, opts.timeoutMs ?? 30_000);
  const res = await fetch(opts.url, {
    method: 'POST',
    redirect: 'error',
    headers: { 'content-type': 'application/json', 'idempotency-key': reply.obligationId, ...signWebhook(opts.secret, body, Math.floor(now / 1_000)) },
    body,
    signal: deadline.signal,
  }).finally(deadline.clear);
  await res.body?.cancel();
  if (res.status === 429) throw new RateLimited(retryAfterSeconds(res.headers.get('retry-after'), now), 'webhook callback');
  if (res.status === 410) throw new Undeliverable(`the webhook callback ${new URL(opts.url).origin} answered HTTP ${res.status}`);
  if (!res.ok) throw new Error(`the webhook callback ${new URL(opts.url).origin} answered HTTP ${res.status}`);
}
