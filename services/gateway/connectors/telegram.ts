// Telegram long polling, for agents whose telegram platform sets `mode: polling` (no public URL):
// one getUpdates loop per bot, held by one gateway replica (the supervisor's leader lock, named
// `telegram-poll:<bot id>`), failing over to another replica when its holder stops or dies.
//
// The offset needs no storage of ours. Telegram confirms every update below the `offset` of a
// getUpdates call and, to a caller without an offset, serves the earliest unconfirmed ones. The
// loop moves its offset past an update only after the update's admission (or its deliberate
// drop) is committed, and confirms it only by the next getUpdates call. So a new leader, which
// starts without an offset, is served exactly the updates no leader confirmed: nothing admitted by
// the old leader and confirmed is served again, nothing unconfirmed is lost, and an update the
// old leader admitted but had not confirmed yet is re-read — its dedupe row (`<bot id>:<update_id>`,
// written in the admission's transaction) makes that a no-op.
//
// Telegram refuses getUpdates while a webhook is set (409), so the loop calls deleteWebhook
// first (pending updates kept). A 409 "terminated by other getUpdates request" (an old holder's
// call still open at Telegram) and other failures are retried with backoff; a 429 waits
// retry_after.
import type { FastifyBaseLogger } from 'fastify';
import { GrammyError } from 'grammy';
import { pause, type AgentRecord } from '../../core/index.js';
import { telegram, type PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';
import { admitOrDropUpdate, apiOptions, botIdentities, telegramSecret } from '../telegram-updates.js';
import type { Connector } from './supervisor.js';

/** getUpdates' long-poll timeout (Telegram holds the call this long when nothing is pending). */
export const TELEGRAM_POLL_SECONDS = 25;
const MAX_BACKOFF_MS = 30_000;

/** How long to wait after a failed Bot API call. */
function backoffAfter(err: unknown, failures: number): number {
  const limited = telegram.asRateLimited(err);
  if (limited) return limited.retryAfterSeconds * 1_000;
  return Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(failures, 6));
}

const describe = (err: unknown) => (err instanceof GrammyError ? `${err.error_code}: ${err.description}` : (err as Error).message);

/** Admits a batch in order; returns the next offset (past the last update that was settled). */
async function admitBatch(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, batch: telegram.TelegramUpdate[], via: { bot: telegram.BotIdentity; log: FastifyBaseLogger }): Promise<number | undefined> {
  let next: number | undefined;
  for (const raw of batch) {
    // Postgres down, secrets unreadable: this throws, the offset stays, the update is fetched again.
    const outcome = await admitOrDropUpdate(ctx, agent, settings, raw, { bot: via.bot, trace: {}, log: via.log });
    if (outcome) via.log.debug({ updateId: raw.update_id, ...outcome }, 'Telegram update (polling)');
    // An update_id that is not a count cannot move the offset (only a broken Bot API sends one).
    if (Number.isSafeInteger(raw.update_id)) next = Math.max(next ?? 0, raw.update_id + 1);
  }
  return next;
}

export const telegramPolling: Connector = {
  platform: 'telegram',

  async plan(ctx, agent, settings) {
    if (!telegram.telegramPolls(settings)) return undefined;
    const token = await telegramSecret(ctx, ctx.deps.log as unknown as FastifyBaseLogger, agent.compiled.agent.namespace, settings, telegram.TELEGRAM_KEYS.botToken);
    if (!token) {
      ctx.deps.log.warn({ agent: `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`, secret: settings.credentialsSecret, key: telegram.TELEGRAM_KEYS.botToken }, 'Telegram polling: the bot token is missing');
      return undefined;
    }
    return `telegram-poll:${telegram.botLabel(token)}`;
  },

  async run(ctx, agent, settings, signal) {
    const agentName = `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;
    const log = (ctx.deps.log as unknown as FastifyBaseLogger).child({ agent: agentName, platform: 'telegram', connection: 'polling' });
    let offset: number | undefined;
    let failures = 0;
    let ready: { api: ReturnType<typeof telegram.telegramApi>; bot: telegram.BotIdentity } | undefined;
    while (!signal.aborted) {
      try {
        if (!ready) {
          const token = await telegramSecret(ctx, log, agent.compiled.agent.namespace, settings, telegram.TELEGRAM_KEYS.botToken);
          if (!token) throw new Error('the bot token is missing');
          const opts = { ...apiOptions(ctx, settings, token), timeoutSeconds: TELEGRAM_POLL_SECONDS + 15 };
          const api = telegram.telegramApi(opts);
          await api.deleteWebhook({ drop_pending_updates: false }, telegram.grammySignal(signal));
          ready = { api, bot: await botIdentities.get(opts, signal) };
          log.info({ bot: ready.bot.username }, 'Polling Telegram for updates');
        }
        const batch = await ready.api.getUpdates({ ...(offset !== undefined ? { offset } : {}), timeout: TELEGRAM_POLL_SECONDS, allowed_updates: ['message'] }, telegram.grammySignal(signal));
        offset = (await admitBatch(ctx, agent, settings, batch as telegram.TelegramUpdate[], { bot: ready.bot, log })) ?? offset;
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        // A refused token (revoked, replaced in the Secret): read it again before the next try.
        if (err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404)) ready = undefined;
        const wait = backoffAfter(err, failures);
        log.warn({ reason: describe(err), retryInMs: wait }, 'Telegram polling failed; retrying');
        await pause(wait, signal);
      }
    }
    log.info('Stopped polling Telegram');
  },
};
