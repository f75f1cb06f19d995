// Replies to Discord. A reply to a `/ask` command goes through the interaction's webhook while
// its token lives (15 minutes; we stop a minute early): the first piece replaces the deferred
// "thinking…" message (PATCH …/messages/@original), further pieces are follow-ups
// (POST /webhooks/{application}/{token}). After that, and for Gateway messages, the bot posts to
// the channel (POST /channels/{id}/messages, `Authorization: Bot …`), the first piece as a reply
// to the user's message (message_reference). Pieces are at most 2 000 characters; mentions in the
// model's text never ping anyone (allowed_mentions: none). While a turn runs, the bot shows
// "typing…" in the channel (POST /channels/{id}/typing, about 10 s) — not for `/ask`, whose
// deferred "thinking…" already shows it. A refusal that names the channel as gone or closed to the
// bot (DISCORD_GONE) is Undeliverable: the ledger gives up at once.
import { z } from 'zod';
import { RateLimited, Undeliverable, splitMessage, type PlatformSender, type ReplyTarget, type SentMessage } from '../adapter.js';
import { DiscordApiError, DiscordRest } from './rest.js';

/** Discord's limit on a message's content. */
export const DISCORD_MAX_MESSAGE_CHARS = 2_000;

/** The interaction token is not used in its last minute (a send may take a while). */
const TOKEN_MARGIN_MS = 60_000;

/** Longest in-process wait for a rate limit hit between the pieces of one split reply. */
const MAX_PIECE_WAIT_SECONDS = 30;

export const discordTargetSchema = z.object({
  kind: z.literal('discord'),
  channelId: z.string().min(1),
  /** The user's message the reply answers (Gateway messages). */
  replyTo: z.string().min(1).optional(),
  /** The `/ask` interaction whose webhook takes the reply while its token lives. */
  interaction: z.object({ applicationId: z.string().min(1), token: z.string().min(1), expiresAt: z.number() }).optional(),
});
export type DiscordTarget = z.infer<typeof discordTargetSchema>;

export interface DiscordSenderOptions {
  token: string;
  /** REST base URL (HERMES_DISCORD_API_URL or the platform's apiUrl). */
  apiUrl: string;
  timeoutMs?: number;
  /** @defaultValue Date.now */
  now?: () => number;
}

/**
 * Discord's JSON error codes that say the channel is gone or closed to the bot: Unknown Channel,
 * Unknown User, Unknown Webhook (an expired interaction), Missing Access, Cannot send messages to
 * this user, Missing Permissions, an archived thread. A 401 (a bad token) stays retryable.
 */
export const DISCORD_GONE: ReadonlySet<number> = new Set([10003, 10013, 10015, 50001, 50007, 50013, 50083]);

const asUndeliverable = (err: unknown) => (err instanceof DiscordApiError && err.code !== undefined && DISCORD_GONE.has(err.code) ? new Undeliverable(err.message, { cause: err }) : undefined);

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason as Error); }, { once: true });
});

const noMentions = { parse: [] as string[] };

export class DiscordSender implements PlatformSender {
  readonly maxMessageChars = DISCORD_MAX_MESSAGE_CHARS;
  private readonly rest: DiscordRest;
  constructor(private readonly opts: DiscordSenderOptions) {
    this.rest = new DiscordRest({ apiUrl: opts.apiUrl, token: opts.token, ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
  }

  /** The interaction's webhook path while its token may still be used. */
  private webhook(t: DiscordTarget): string | undefined {
    const i = t.interaction;
    if (!i || (this.opts.now ?? Date.now)() > i.expiresAt - TOKEN_MARGIN_MS) return undefined;
    return `/webhooks/${encodeURIComponent(i.applicationId)}/${encodeURIComponent(i.token)}`;
  }

  private post(t: DiscordTarget, piece: string, index: number, signal: AbortSignal): Promise<{ id: string }> {
    const hook = this.webhook(t);
    if (hook && index === 0) return this.rest.request('PATCH', `${hook}/messages/@original`, { body: { content: piece, allowed_mentions: noMentions }, signal, asBot: false });
    if (hook) return this.rest.request('POST', `${hook}?wait=true`, { body: { content: piece, allowed_mentions: noMentions }, signal, asBot: false });
    const reference = index === 0 && t.replyTo ? { message_reference: { message_id: t.replyTo, fail_if_not_exists: false } } : {};
    return this.rest.request('POST', `/channels/${encodeURIComponent(t.channelId)}/messages`, { body: { content: piece, allowed_mentions: noMentions, ...reference }, signal });
  }

  /**
   * Posts the pieces in order. A 429 on the first piece is RateLimited (the ledger defers the whole
   * reply, nothing was sent); on a later piece we wait here (bounded), so pieces already posted
   * are not sent again by the ledger's retry.
   */
  async send(target: ReplyTarget, text: string, signal: AbortSignal): Promise<SentMessage[]> {
    const t = discordTargetSchema.parse(target);
    if (!text.trim()) return [];
    const sent: SentMessage[] = [];
    for (const piece of splitMessage(text, this.maxMessageChars)) {
      for (;;) {
        try {
          const res = await this.post(t, piece, sent.length, signal);
          sent.push({ id: String(res.id) });
          break;
        } catch (err) {
          if (!(err instanceof RateLimited)) throw asUndeliverable(err) ?? err;
          if (sent.length === 0 || err.retryAfterSeconds > MAX_PIECE_WAIT_SECONDS) throw err;
          await sleep(err.retryAfterSeconds * 1_000, signal);
        }
      }
    }
    return sent;
  }

  /** "typing…" in the channel as the bot (Discord shows it about 10 s, or until the bot's next message). */
  async typing(target: ReplyTarget, signal: AbortSignal): Promise<void> {
    const t = discordTargetSchema.parse(target);
    await this.rest.request('POST', `/channels/${encodeURIComponent(t.channelId)}/typing`, { signal });
  }

  async edit(target: ReplyTarget, message: SentMessage, text: string, signal: AbortSignal): Promise<void> {
    const t = discordTargetSchema.parse(target);
    const content = text.slice(0, this.maxMessageChars);
    const hook = this.webhook(t);
    if (hook) await this.rest.request('PATCH', `${hook}/messages/${encodeURIComponent(message.id)}`, { body: { content, allowed_mentions: noMentions }, signal, asBot: false });
    else await this.rest.request('PATCH', `/channels/${encodeURIComponent(t.channelId)}/messages/${encodeURIComponent(message.id)}`, { body: { content, allowed_mentions: noMentions }, signal });
  }
}
