// Replies to Telegram through the Bot API (grammY's Api): sendMessage into the chat (and its forum
// topic, replying to the message it answers), editMessageText for edits, sendChatAction `typing`
// while a turn runs. Plain text, no parse_mode: a model's Markdown is not always valid
// MarkdownV2, and Telegram refuses the whole message when it is not. A 429
// (`parameters.retry_after`) becomes RateLimited so the ledger waits without spending an attempt; a
// chat that is gone or closed to the bot (blocked, kicked, deleted) is Undeliverable, and a group
// that became a supergroup gets its reply in the supergroup.
import { GrammyError } from 'grammy';
import { z } from 'zod';
import { splitMessage, type PlatformSender, type ReplyTarget, type SentMessage } from '../adapter.js';
import { asRateLimited, asUndeliverable, grammySignal, migratedChat, telegramApi } from './api.js';

/** Telegram's limit for one message's text. */
export const TELEGRAM_MAX_MESSAGE_CHARS = 4_096;

/** Longest in-process wait for a rate limit hit between the pieces of one split reply. */
const MAX_PIECE_WAIT_SECONDS = 30;

export const telegramTargetSchema = z.object({
  kind: z.literal('telegram'),
  chatId: z.union([z.number().int(), z.string().min(1)]),
  /** A forum topic (message_thread_id). */
  threadId: z.number().int().optional(),
  /** The message the reply quotes (groups). */
  replyTo: z.number().int().optional(),
});
export type TelegramTarget = z.infer<typeof telegramTargetSchema>;

export interface TelegramSenderOptions {
  token: string;
  /** Bot API base URL (HERMES_TELEGRAM_API_URL or the platform's apiUrl). */
  apiUrl: string;
  /** Bound on one HTTP call. @defaultValue 30 */
  timeoutSeconds?: number;
}

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason as Error); }, { once: true });
});

/**
 * sendMessage's options for a piece into `chatId`: the forum topic, and on the first piece the
 * quote of the message it answers — not in the supergroup a group became, where that id means nothing.
 */
function messageOptions(t: TelegramTarget, chatId: TelegramTarget['chatId'], first: boolean) {
  const quote = first && t.replyTo !== undefined && chatId === t.chatId ? { reply_parameters: { message_id: t.replyTo, allow_sending_without_reply: true } } : {};
  return { ...(t.threadId !== undefined ? { message_thread_id: t.threadId } : {}), ...quote, link_preview_options: { is_disabled: true } };
}

export class TelegramSender implements PlatformSender {
  readonly maxMessageChars = TELEGRAM_MAX_MESSAGE_CHARS;
  constructor(private readonly opts: TelegramSenderOptions) {}

  /**
   * Sends the pieces in order; only the first quotes the message it answers (and still goes out
   * when that message was deleted). A 429 on the first piece is RateLimited (nothing was sent, the
   * ledger defers the reply); on a later piece we wait retry_after here (bounded), so pieces
   * already sent are not sent again by the ledger's retry.
   */
  async send(target: ReplyTarget, text: string, signal: AbortSignal): Promise<SentMessage[]> {
    const t = telegramTargetSchema.parse(target);
    // Telegram refuses an empty text: a blank reply has nothing to deliver.
    if (!text.trim()) return [];
    const api = telegramApi(this.opts);
    const sent: SentMessage[] = [];
    let chatId = t.chatId;
    for (const piece of splitMessage(text, this.maxMessageChars)) {
      for (;;) {
        try {
          const res = await api.sendMessage(chatId, piece, messageOptions(t, chatId, sent.length === 0), grammySignal(signal));
          sent.push({ id: String(res.message_id) });
          break;
        } catch (err) {
          // Followed once: a server that keeps naming another chat does not keep us sending.
          const moved = migratedChat(err);
          if (moved !== undefined && chatId === t.chatId && moved !== chatId) { chatId = moved; continue; }
          const limited = asRateLimited(err);
          if (!limited) throw asUndeliverable(err) ?? err;
          if (sent.length === 0 || limited.retryAfterSeconds > MAX_PIECE_WAIT_SECONDS) throw limited;
          await sleep(limited.retryAfterSeconds * 1_000, signal);
        }
      }
    }
    return sent;
  }

  /** "typing…" in the chat (and its forum topic); Telegram shows it about 5 s, or until the bot's next message. */
  async typing(target: ReplyTarget, signal: AbortSignal): Promise<void> {
    const t = telegramTargetSchema.parse(target);
    try {
      await telegramApi(this.opts).sendChatAction(t.chatId, 'typing', t.threadId !== undefined ? { message_thread_id: t.threadId } : {}, grammySignal(signal));
    } catch (err) {
      throw asRateLimited(err) ?? err;
    }
  }

  async edit(target: ReplyTarget, message: SentMessage, text: string, signal: AbortSignal): Promise<void> {
    const t = telegramTargetSchema.parse(target);
    try {
      await telegramApi(this.opts).editMessageText(t.chatId, Number(message.id), text.slice(0, this.maxMessageChars), { link_preview_options: { is_disabled: true } }, grammySignal(signal));
    } catch (err) {
      // Telegram refuses an edit that changes nothing; the message already says it.
      if (err instanceof GrammyError && err.error_code === 400 && /message is not modified/i.test(err.description)) return;
      throw asRateLimited(err) ?? err;
    }
  }
}


