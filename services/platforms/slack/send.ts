// Replies to Slack through the official Web API client (`@slack/web-api`): chat.postMessage into
// the conversation (and its thread), chat.update for edits. The client's own retries and its
// rate-limit waits are off: the delivery ledger retries, and a 429 becomes RateLimited so the
// ledger waits Retry-After (`not_before`) without spending an attempt. A refusal that names the
// conversation as gone or closed to the bot (SLACK_GONE) is Undeliverable: the ledger gives up at once.
// Every text goes through slackText (format.ts): Slack's markup characters escaped, so a reply
// notifies nobody, and the model's Markdown written as Slack's mrkdwn.
import { ErrorCode, WebClient, type FetchFunction } from '@slack/web-api';
import { z } from 'zod';
import { slackText } from './format.js';
import { RateLimited, Undeliverable, splitMessage, type PlatformSender, type ReplyTarget, type SentMessage } from '../adapter.js';

/**
 * Slack truncates `text` past 40 000 characters and advises far less; 4 000 keeps each piece one
 * readable message (Hermes' Slack adapter splits at the same size).
 */
export const SLACK_MAX_MESSAGE_CHARS = 4_000;

/** Longest in-process wait for a rate limit hit between the pieces of one split reply. */
const MAX_PIECE_WAIT_SECONDS = 30;

export const slackTargetSchema = z.object({ kind: z.literal('slack'), channel: z.string().min(1), threadTs: z.string().min(1).optional(), team: z.string().optional() });
export type SlackTarget = z.infer<typeof slackTargetSchema>;

export interface SlackSenderOptions {
  token: string;
  /** Web API base URL (HERMES_SLACK_API_URL or the platform's apiUrl). */
  apiUrl: string;
  /** Bound on one HTTP call. @defaultValue 30 000 */
  timeoutMs?: number;
}

const rateLimitCode = 'slack_webapi_rate_limited_error';

function asRateLimited(err: unknown): RateLimited | undefined {
  const e = err as { code?: string; retryAfter?: number };
  return e?.code === rateLimitCode ? new RateLimited(Math.max(1, Math.ceil(e.retryAfter ?? 1))) : undefined;
}

/**
 * chat.postMessage errors that say the conversation is gone or closed to the bot (Slack's method
 * documentation): a deleted or archived channel, a bot no longer in it, a DM the workspace or user
 * turned off, a thread that takes no replies. Token and scope errors (`invalid_auth`,
 * `token_revoked`, `missing_scope`, …) are not here: an operator can mend those while the ledger
 * retries.
 */
export const SLACK_GONE: ReadonlySet<string> = new Set([
  'channel_not_found', 'is_archived', 'not_in_channel', 'messages_tab_disabled', 'cannot_reply_to_message',
  'restricted_action', 'restricted_action_read_only_channel', 'restricted_action_thread_only_channel', 'restricted_action_non_threadable_channel',
]);

function asUndeliverable(err: unknown): Undeliverable | undefined {
  const e = err as { code?: string; data?: { error?: unknown } };
  const error = e?.code === ErrorCode.PlatformError ? e.data?.error : undefined;
  return typeof error === 'string' && SLACK_GONE.has(error) ? new Undeliverable(`Slack answered ${error}`, { cause: err }) : undefined;
}

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason as Error); }, { once: true });
});

export class SlackSender implements PlatformSender {
  readonly maxMessageChars = SLACK_MAX_MESSAGE_CHARS;
  constructor(private readonly opts: SlackSenderOptions) {}

  /** A client whose every request is also cancelled by `signal` (the attempt deadline). */
  private client(signal: AbortSignal): WebClient {
    const abortable: FetchFunction = (url, init) => fetch(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });
    return new WebClient(this.opts.token, {
      slackApiUrl: this.opts.apiUrl.endsWith('/') ? this.opts.apiUrl : `${this.opts.apiUrl}/`,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      allowAbsoluteUrls: false,
      timeout: this.opts.timeoutMs ?? 30_000,
      fetch: abortable,
    });
  }

  /**
   * Posts the pieces in order. A 429 on the first piece is RateLimited (the ledger defers the whole
   * reply, nothing was sent); on a later piece we wait Retry-After here (bounded), so pieces already
   * posted are not sent again by the ledger's retry.
   */
  async send(target: ReplyTarget, text: string, signal: AbortSignal): Promise<SentMessage[]> {
    const t = slackTargetSchema.parse(target);
    // Slack refuses an empty text (no_text): a blank reply has nothing to deliver.
    if (!text.trim()) return [];
    const client = this.client(signal);
    const sent: SentMessage[] = [];
    for (const piece of splitMessage(text, this.maxMessageChars)) {
      for (;;) {
        try {
          const res = await client.chat.postMessage({ channel: t.channel, text: slackText(piece), ...(t.threadTs ? { thread_ts: t.threadTs } : {}), unfurl_links: false, unfurl_media: false });
          sent.push({ id: String(res.ts ?? '') });
          break;
        } catch (err) {
          const limited = asRateLimited(err);
          if (!limited) throw asUndeliverable(err) ?? err;
          if (sent.length === 0 || limited.retryAfterSeconds > MAX_PIECE_WAIT_SECONDS) throw limited;
          await sleep(limited.retryAfterSeconds * 1_000, signal);
        }
      }
    }
    return sent;
  }

  async remove(target: ReplyTarget, message: SentMessage, signal: AbortSignal): Promise<void> {
    const t = slackTargetSchema.parse(target);
    try {
      await this.client(signal).chat.delete({ channel: t.channel, ts: message.id });
    } catch (err) {
      throw asRateLimited(err) ?? err;
    }
  }

  async edit(target: ReplyTarget, message: SentMessage, text: string, signal: AbortSignal): Promise<void> {
    const t = slackTargetSchema.parse(target);
    try {
      await this.client(signal).chat.update({ channel: t.channel, ts: message.id, text: slackText(text.slice(0, this.maxMessageChars)) });
    } catch (err) {
      throw asRateLimited(err) ?? err;
    }
  }
}
