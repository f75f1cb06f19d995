// The signed webhook platform: HMAC-signed POSTs from anything (CI, monitoring, scripts), replies
// stored or POSTed (signed) to the Agent's callbackUrl, and a restricted toolset for untrusted input.
export { WEBHOOK_HEADERS, WEBHOOK_MAX_SKEW_SECONDS, checkWebhookTimestamp, signWebhook, verifyWebhookRequest, webhookSignature } from './verify.js';
export { idempotencyKeySchema, signatureEventId, webhookBodySchema, webhookEvent, type WebhookBody, type WebhookTarget } from './events.js';
export { postWebhookReply, webhookTargetSchema, type WebhookReply } from './send.js';

/** Secret key read from the platform's `credentials.secretRef` (in `hermes dev`: the variable of the same name). */
export const WEBHOOK_KEYS = { secret: 'WEBHOOK_SECRET' } as const;

/**
 * What a webhook turn may use unless the Agent's webhook platform entry names its own `toolsets`
 * (Hermes' `hermes-webhook`: web_search, web_extract, vision_analyze, clarify — read-only tools,
 * nothing that runs commands, writes files, memory or skills, or reads other conversations). Of
 * these, only toolsets this install has and the Profile enables reach the model (today: clock).
 */
export const WEBHOOK_DEFAULT_TOOLSETS: readonly string[] = ['clock', 'web', 'vision', 'clarify'];
