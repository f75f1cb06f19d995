// The Bot API client: grammY's `Api` (typed methods and errors, no bot framework) with its
// `apiRoot` pointed at HERMES_TELEGRAM_API_URL or the platform's apiUrl, so requests go to
// `<apiUrl>/bot<token>/<method>`. grammY adds no retries of its own (the delivery ledger and the
// poller retry) and leaves the token out of its error messages.
import { createHash } from 'node:crypto';
import { Api, GrammyError } from 'grammy';
import { RateLimited, Undeliverable } from '../adapter.js';
import type { BotIdentity } from './updates.js';

export interface TelegramApiOptions {
  token: string;
  /** Bot API base URL (HERMES_TELEGRAM_API_URL or the platform's apiUrl). */
  apiUrl: string;
  /** Bound on one HTTP call. @defaultValue 30 */
  timeoutSeconds?: number;
}

/**
 * grammY types its `signal` parameters with the abort-controller polyfill it ships for old Nodes;
 * at run time it only calls `addEventListener('abort')`, which Node's own AbortSignal has.
 */
export type GrammySignal = Parameters<Api['getMe']>[0];
export const grammySignal = (signal: AbortSignal | undefined): GrammySignal => signal as unknown as GrammySignal;

export function telegramApi(opts: TelegramApiOptions): Api {
  return new Api(opts.token, { apiRoot: opts.apiUrl.replace(/\/+$/, ''), timeoutSeconds: opts.timeoutSeconds ?? 30 });
}

/** A 429 from Telegram (`parameters.retry_after`, seconds) as RateLimited; undefined for anything else. */
export function asRateLimited(err: unknown): RateLimited | undefined {
  if (!(err instanceof GrammyError) || err.error_code !== 429) return undefined;
  return new RateLimited(Math.max(1, Math.ceil(err.parameters.retry_after ?? 1)), err.description);
}

/**
 * Bot API refusals that say the chat is gone or closed to the bot: every 403 (the bot was blocked,
 * kicked, or may not write first; the user was deleted) and the 400s that name a missing chat or
 * topic, or a bot without the right to write. A 401 (a revoked token) stays retryable: an operator
 * can mend it while the ledger retries.
 */
const CLOSED_CHAT = /chat not found|message thread not found|TOPIC_(CLOSED|DELETED)|have no rights to send|not enough rights to send|CHAT_WRITE_FORBIDDEN|CHAT_RESTRICTED/i;

export function asUndeliverable(err: unknown): Undeliverable | undefined {
  if (!(err instanceof GrammyError)) return undefined;
  const gone = err.error_code === 403 || (err.error_code === 400 && CLOSED_CHAT.test(err.description));
  return gone ? new Undeliverable(`Telegram answered ${err.error_code}: ${err.description}`, { cause: err }) : undefined;
}

/** The supergroup a group became (Telegram's 400 with `parameters.migrate_to_chat_id`): its replies go there. */
export function migratedChat(err: unknown): number | undefined {
  return err instanceof GrammyError && err.error_code === 400 ? err.parameters.migrate_to_chat_id : undefined;
}

/** The bot's numeric id: the part of the token before `:` (public: it is the bot's user id). */
export function botIdOf(token: string): string | undefined {
  return /^(\d{1,20}):/.exec(token)?.[1];
}

/**
 * A name for the bot that is never the token: its id when the token has the usual `<id>:<secret>`
 * form, else a short hash of the token.
 */
export function botLabel(token: string): string {
  return botIdOf(token) ?? `h${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;
}

const IDENTITY_TTL_MS = 60 * 60 * 1_000;
const MAX_IDENTITIES = 256;

/**
 * getMe answers, cached per (API URL, token) for an hour. Bounded (the oldest entry goes first),
 * and only filled for bots whose requests were verified: a stranger cannot grow it.
 */
export class BotIdentities {
  private readonly cache = new Map<string, { identity: BotIdentity; at: number }>();
  constructor(private readonly now: () => number = Date.now) {}

  async get(opts: TelegramApiOptions, signal?: AbortSignal): Promise<BotIdentity> {
    const key = createHash('sha256').update(`${opts.apiUrl}\0${opts.token}`).digest('hex');
    const hit = this.cache.get(key);
    if (hit && this.now() - hit.at < IDENTITY_TTL_MS) return hit.identity;
    const me = await telegramApi(opts).getMe(grammySignal(signal));
    const identity = { id: me.id, username: me.username };
    this.cache.delete(key);
    if (this.cache.size >= MAX_IDENTITIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { identity, at: this.now() });
    return identity;
  }
}
