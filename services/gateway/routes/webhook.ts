// The signed webhook platform (platforms/webhook): anything that can POST talks to one Agent.
//   POST /hooks/webhook/:namespace/:name                 a message (body: platforms/webhook/events.ts)
//   GET  /hooks/webhook/:namespace/:name/admissions/:id  its state and stored reply (signed over the path)
// In order, each step refusing before the next runs, so nothing bad reaches the ledger:
//   413 body over HERMES_MAX_BODY_BYTES; 415 not JSON; 400 bad path;
//   401 X-Hermes-Timestamp missing or more than 300 s off either way (no lookup at all);
//   401 no such Agent, no webhook platform, no WEBHOOK_SECRET, or a signature that does not
//       match (one answer for all; the reason is logged);
//   503 secrets unreadable / Postgres down (the sender retries);
//   400 malformed JSON, an unknown field (a `reply_url` included: replies go to the Agent's
//       callbackUrl), a bad Idempotency-Key, or one that differs from the body's `id`;
//   202 admitted, a duplicate (same Idempotency-Key / id, or a signed request seen before, whatever
//       Idempotency-Key it now carries: webhook-replay.ts), or
//       refused (a `user` outside the platform's allowlist): `{ outcome, admissionId }`.
// Authorisation: the signature authenticates the sender (Hermes: webhooks are always allowed);
// the `user` it names must be in the platform's allowlist when one is set.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { HermesError, getAdmissionStatus, getObligationForAdmission, injectTraceContext, pendingClarificationOf, type AgentRecord } from '../../core/index.js';
import { platformOf, webhook, type PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';
import { admitPlatformEvent } from '../platform-admission.js';
import { parseRawJson, readPlatformSecret } from '../platform-secrets.js';
import { agentParams, parseInput } from '../validation.js';
import { admitOnceSigned } from '../webhook-replay.js';
import { admissionView } from './admissions.js';

const unverified = (reason: string) => new HermesError('HERMES_SIGNATURE_INVALID', `(${reason})`);

function notVerified(request: FastifyRequest, namespace: string, name: string, reason: string): HermesError {
  request.log.info({ agent: `${namespace}/${name}`, reason }, 'Refused a webhook request');
  return new HermesError('HERMES_SIGNATURE_INVALID');
}

interface Verified { agent: AgentRecord; settings: PlatformSettings; namespace: string; name: string }

/** Timestamp, agent, secret and signature over `payload`, in that order (see the header). */
async function verifyRequest(ctx: GatewayContext, request: FastifyRequest, payload: Buffer | string, nowSeconds: number): Promise<Verified> {
  const { namespace, name } = parseInput(agentParams, request.params, 'params');
  const headers = { timestamp: request.headers[webhook.WEBHOOK_HEADERS.timestamp], signature: request.headers[webhook.WEBHOOK_HEADERS.signature] };
  const fresh = webhook.checkWebhookTimestamp(headers.timestamp, nowSeconds);
  if (!fresh.ok) throw unverified(fresh.reason);
  const agent = await ctx.deps.agents.get(namespace, name);
  const settings = agent ? platformOf(agent.compiled, 'webhook') : undefined;
  if (!agent || !settings) throw notVerified(request, namespace, name, 'no Agent with a webhook platform at this URL');
  const secret = await readPlatformSecret(ctx, request, namespace, settings, webhook.WEBHOOK_KEYS.secret);
  if (!secret) throw notVerified(request, namespace, name, 'WEBHOOK_SECRET is not configured');
  const verified = webhook.verifyWebhookRequest(secret, headers, payload, nowSeconds);
  if (!verified.ok) throw notVerified(request, namespace, name, verified.reason);
  return { agent, settings, namespace, name };
}

function parseBody(raw: Buffer): webhook.WebhookBody {
  const json = parseRawJson(raw, 'A webhook');
  if (json && typeof json === 'object' && ('reply_url' in json || 'replyUrl' in json)) {
    throw new HermesError('HERMES_BAD_REQUEST', 'A request cannot choose where replies go: set callbackUrl on the Agent\'s webhook platform (or read the reply from GET …/admissions/<admissionId>).');
  }
  return parseInput(webhook.webhookBodySchema, json, 'body');
}

function idempotencyKey(request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key'];
  if (Array.isArray(raw)) throw new HermesError('HERMES_BAD_REQUEST', 'Send the Idempotency-Key header once.');
  if (raw === undefined || raw === '') return undefined;
  return parseInput(z.object({ 'idempotency-key': webhook.idempotencyKeySchema }), { 'idempotency-key': raw }, 'headers')['idempotency-key'];
}

const admissionPath = agentParams.extend({ id: z.uuid() });

export function registerWebhookRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const now = ctx.deps.tuning?.now ?? Date.now;
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    scope.post('/hooks/webhook/:namespace/:name', async (request, reply) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const { agent, settings, namespace, name } = await verifyRequest(ctx, request, raw, Math.floor(now() / 1_000));
      const key = idempotencyKey(request);
      const body = parseBody(raw);
      const signature = String(request.headers[webhook.WEBHOOK_HEADERS.signature]);
      const made = webhook.webhookEvent(body, key, signature);
      if (!made.ok) throw new HermesError('HERMES_BAD_REQUEST', made.detail);
      const maxChars = ctx.deps.config.HERMES_MAX_MESSAGE_CHARS;
      if (made.event.text.length > maxChars) throw new HermesError('HERMES_BAD_REQUEST', `The message has ${made.event.text.length} characters; this gateway takes at most ${maxChars} (HERMES_MAX_MESSAGE_CHARS).`);
      // Signed means allowed, unless the platform lists the users it accepts.
      const effective = settings.allowlist.length > 0 ? settings : { ...settings, allowAll: true };
      const admit = () => admitPlatformEvent(ctx, agent, effective, made.event, { trace: injectTraceContext(request.otelContext), log: request.log });
      // Keyed by the (unsigned) Idempotency-Key header: the signature must not admit twice under another key.
      const once = key !== undefined && body.id === undefined ? await admitOnceSigned(ctx.deps.db, agent.agentId, signature, admit) : { admitted: await admit() };
      if ('replayOf' in once) {
        request.log.warn({ agent: `${namespace}/${name}`, platform: 'webhook', eventId: made.event.eventId, replayOf: once.replayOf }, 'A signed webhook request was sent again under another Idempotency-Key: answered as the duplicate it is');
        return reply.code(202).send({ outcome: 'duplicate', admissionId: once.replayOf });
      }
      const { admitted } = once;
      request.log.info({ agent: `${namespace}/${name}`, platform: 'webhook', eventId: made.event.eventId, ...admitted }, 'Admitted webhook message');
      return reply.code(202).send({ outcome: admitted.outcome, admissionId: admitted.admissionId });
    });

    scope.get('/hooks/webhook/:namespace/:name/admissions/:id', async (request) => {
      // No body: the signature covers the path as sent (admission id included).
      const { agent, namespace, name } = await verifyRequest(ctx, request, request.url, Math.floor(now() / 1_000));
      const { id } = parseInput(admissionPath, request.params, 'params');
      const admission = await getAdmissionStatus(ctx.deps.db.pool, id);
      if (!admission || admission.agentId !== agent.agentId || admission.platform !== 'webhook') {
        throw new HermesError('HERMES_ADMISSION_NOT_FOUND', `Agent "${namespace}/${name}" has no webhook admission "${id}".`);
      }
      const asked = admission.state === 'started' ? await pendingClarificationOf(ctx.deps.db.pool, id) : undefined;
      return admissionView(admission, await getObligationForAdmission(ctx.deps.db.pool, id), asked);
    });
  });
}
