// POST /hooks/telegram/:namespace/:name — Telegram's webhook for one Agent (setWebhook with
// `secret_token`). In order, each step refusing before the next runs, so nothing bad reaches the
// ledger:
//   413 body over HERMES_MAX_BODY_BYTES; 415 not JSON; 400 bad path;
//   401 no such Agent, no telegram platform, a platform in polling mode, no TELEGRAM_WEBHOOK_SECRET,
//       or an X-Telegram-Bot-Api-Secret-Token that does not match (one answer for all, the reason
//       is logged, so it tells nobody which agents exist);
//   503 secrets unreadable / Postgres down / getMe unanswered (Telegram retries);
//   400 malformed JSON or a body without an integer update_id (only for requests with the right token);
//   200 for everything admitted, deduplicated, refused, answered with the limit (a text past
//       HERMES_MAX_MESSAGE_CHARS) or ignored — and for an update of a shape we refuse, dropped with a
//       warning as polling drops it:
//       Telegram re-sends an update it got no 2xx for for a day, and slows the bot's other updates meanwhile.
// Telegram re-sends an update it got no 2xx for, with the same update_id: the dedupe row
// (`<bot id>:<update_id>`) makes it a no-op 200.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HermesError, injectTraceContext, type AgentRecord } from '../../core/index.js';
import { platformOf, telegram, type PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';
import { admitOrDropUpdate, apiOptions, botIdentity, telegramSecret } from '../telegram-updates.js';
import { agentParams, parseInput } from '../validation.js';

function notVerified(request: FastifyRequest, namespace: string, name: string, reason: string): HermesError {
  request.log.info({ agent: `${namespace}/${name}`, reason }, 'Refused a Telegram request');
  return new HermesError('HERMES_SIGNATURE_INVALID');
}

async function telegramAgent(ctx: GatewayContext, namespace: string, name: string): Promise<{ agent: AgentRecord; settings: PlatformSettings } | undefined> {
  const agent = await ctx.deps.agents.get(namespace, name);
  const settings = agent ? platformOf(agent.compiled, 'telegram') : undefined;
  return agent && settings ? { agent, settings } : undefined;
}

/** The body as Telegram sends an Update: JSON with an integer update_id, else a 400 (nothing to drop or confirm). */
function updateBody(raw: Buffer): { update_id: number } {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HermesError('HERMES_BAD_JSON', 'Telegram sends an Update as a JSON object.');
  }
  const id = (body as { update_id?: unknown } | null)?.update_id;
  if (!Number.isSafeInteger(id)) throw new HermesError('HERMES_BAD_REQUEST', 'body.update_id: Telegram sends an Update with an integer update_id.');
  return body as { update_id: number };
}

export function registerTelegramRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    scope.post('/hooks/telegram/:namespace/:name', async (request, reply) => {
      const { namespace, name } = parseInput(agentParams, request.params, 'params');
      const found = await telegramAgent(ctx, namespace, name);
      if (!found) throw notVerified(request, namespace, name, 'no Agent with a telegram platform at this URL');
      const { agent, settings } = found;
      if (telegram.telegramPolls(settings)) throw notVerified(request, namespace, name, 'the telegram platform long-polls (mode: polling): it takes no webhooks');
      const secret = await telegramSecret(ctx, request.log, namespace, settings, telegram.TELEGRAM_KEYS.webhookSecret);
      if (!secret) {
        request.log.warn({ namespace, secret: settings.credentialsSecret, key: telegram.TELEGRAM_KEYS.webhookSecret }, 'The Telegram webhook secret is missing: requests to this agent cannot be verified');
        throw notVerified(request, namespace, name, 'TELEGRAM_WEBHOOK_SECRET is not configured');
      }
      const verified = telegram.verifyTelegramSecret(secret, request.headers[telegram.TELEGRAM_SECRET_HEADER]);
      if (!verified.ok) throw notVerified(request, namespace, name, verified.reason);

      const body = updateBody(Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0));
      const token = await telegramSecret(ctx, request.log, namespace, settings, telegram.TELEGRAM_KEYS.botToken);
      if (!token) throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE', `Secret "${settings.credentialsSecret}" has no ${telegram.TELEGRAM_KEYS.botToken}.`);
      const bot = await botIdentity(apiOptions(ctx, settings, token), request.log);
      const outcome = await admitOrDropUpdate(ctx, agent, settings, body, { bot, trace: injectTraceContext(request.otelContext), log: request.log });
      // Dropped (logged): confirmed all the same, as polling confirms it.
      if (!outcome) return reply.code(200).send({ ok: true });
      if (outcome.outcome === 'ignored') request.log.debug({ agent: `${namespace}/${name}`, reason: outcome.reason }, 'Ignored a Telegram update');
      else request.log.info({ agent: `${namespace}/${name}`, platform: 'telegram', updateId: body.update_id, ...outcome }, 'Admitted Telegram update');
      return reply.code(200).send({ ok: true });
    });
  });
}
