// What the webhook route and the long-polling connector share for one Telegram update, once it is
// known to come from Telegram: the bot's identity (getMe, cached), normalise, admit.
import type { FastifyBaseLogger } from 'fastify';
import { ZodError } from 'zod';
import { HermesError, type AgentRecord, type TraceCarrier } from '../core/index.js';
import { telegram, type PlatformSettings } from '../platforms/index.js';
import type { GatewayContext } from './context.js';
import { admitPlatformEvent, type PlatformAdmission } from './platform-admission.js';

/** getMe answers for this process, filled only for verified requests and polled bots. */
export const botIdentities = new telegram.BotIdentities();

/** The Bot API options for an agent's telegram platform and its token. */
export const apiOptions = (ctx: GatewayContext, settings: PlatformSettings, token: string): telegram.TelegramApiOptions =>
  ({ token, apiUrl: telegram.telegramApiUrl(settings, ctx.deps.config.HERMES_TELEGRAM_API_URL) });

/** getMe, as a 503 when Telegram does not answer (the platform retries the webhook). */
export async function botIdentity(opts: telegram.TelegramApiOptions, log: FastifyBaseLogger): Promise<telegram.BotIdentity> {
  try {
    return await botIdentities.get(opts);
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'Could not read the Telegram bot\'s identity (getMe)');
    throw new HermesError('HERMES_PLATFORM_UNAVAILABLE');
  }
}

export type UpdateOutcome = PlatformAdmission | { outcome: 'ignored'; reason: string };

/** Normalises and admits one update (a text past HERMES_MAX_MESSAGE_CHARS is answered with the limit). */
export async function admitTelegramUpdate(
  ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, update: telegram.TelegramUpdate, via: { bot: telegram.BotIdentity; trace: TraceCarrier; log: FastifyBaseLogger },
): Promise<UpdateOutcome> {
  const normalised = telegram.normaliseTelegram(update, settings, via.bot);
  if (normalised.kind !== 'message') return { outcome: 'ignored', reason: normalised.kind === 'ignore' ? normalised.reason : `a ${normalised.kind}` };
  return admitPlatformEvent(ctx, agent, settings, normalised.event, { trace: via.trace, log: via.log });
}

/**
 * Parses and admits one update as Telegram sent it (webhook or long polling). An update refused
 * for what it is — a shape we do not take (zod's ZodError is not an Error), a NUL in an id — is dropped with a warning (undefined): sent again it
 * would be refused again, and Telegram sends an unconfirmed update again and again (polling: for
 * good; webhook: for a day, slowing the bot's others). Anything else (Postgres down, secrets
 * unreadable) throws, so the update is sent again.
 */
export async function admitOrDropUpdate(
  ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, raw: unknown, via: { bot: telegram.BotIdentity; trace: TraceCarrier; log: FastifyBaseLogger },
): Promise<UpdateOutcome | undefined> {
  try {
    return await admitTelegramUpdate(ctx, agent, settings, telegram.parseTelegramUpdate(raw), via);
  } catch (err) {
    if (!(err instanceof HermesError && err.status < 500) && !(err instanceof ZodError)) throw err;
    via.log.warn({ updateId: (raw as { update_id?: unknown } | null)?.update_id, reason: err.message }, 'Dropped a Telegram update the gateway refuses');
    return undefined;
  }
}

/** Reads one key of the platform's Secret; a read failure is a 503 (logged), a missing key undefined. */
export async function telegramSecret(ctx: GatewayContext, log: FastifyBaseLogger, namespace: string, settings: PlatformSettings, key: string): Promise<string | undefined> {
  const { secrets } = ctx.deps;
  if (!secrets) throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE', 'This gateway was started without a secret source (HERMES_SECRETS_SOURCE).');
  const ref = { name: settings.credentialsSecret, key };
  try {
    return (await secrets.resolve(namespace, ref)) || undefined;
  } catch (err) {
    log.warn({ err, namespace, secret: ref.name, key }, 'Could not read the Telegram secret');
    throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE');
  }
}
