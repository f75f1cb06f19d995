// Telegram updates → one InboundEvent, or an ignore with its reason.
//   message in a private chat → a message (one session per chat);
//   message in a group or supergroup, per the platform's groupPolicy:
//     mention (default): only when it addresses the bot — an @username mention (or a text_mention
//       of the bot), a reply to one of the bot's messages, or a /command (`/cmd` or `/cmd@ourbot`;
//       `/cmd@otherbot` is not ours);
//     all: every message; off: none;
//   a forum topic (is_topic_message + message_thread_id) is one session shared by everyone in it,
//     and the reply goes into the topic; other group messages are one session per participant;
//   messages from bots, without a sender (anonymous admins, channel posts), without text or
//   caption, and other update kinds (edits, callbacks, joins…) → ignored.
// The bot's @mention is removed from the text and `/cmd@ourbot` becomes `/cmd`. The event id is
// `<bot id>:<update_id>`: update ids count per bot, so a webhook retry or a re-read after a poller
// failover is one admission.
import { z, ZodError } from 'zod';
import type { InboundEvent, Normalised, PlatformSettings } from '../adapter.js';

const int = z.number().int();
const user = z.object({ id: int, is_bot: z.boolean(), first_name: z.string().max(256).optional(), username: z.string().max(64).optional() }).passthrough();
const entity = z.object({ type: z.string().max(64), offset: int.nonnegative(), length: int.nonnegative(), user: user.optional() }).passthrough();

const message = z.object({
  message_id: int,
  message_thread_id: int.optional(),
  is_topic_message: z.boolean().optional(),
  from: user.optional(),
  chat: z.object({ id: int, type: z.enum(['private', 'group', 'supergroup', 'channel']), is_forum: z.boolean().optional() }).passthrough(),
  date: int,
  // Telegram's own limits: 4 096 characters of text, 1 024 of caption (4 096 for Premium senders).
  text: z.string().max(4_096).optional(),
  caption: z.string().max(4_096).optional(),
  entities: z.array(entity).max(1_000).optional(),
  caption_entities: z.array(entity).max(1_000).optional(),
  reply_to_message: z.object({ message_id: int, from: user.optional() }).passthrough().optional(),
}).passthrough();

const update = z.object({ update_id: int.nonnegative() }).passthrough();

export type TelegramMessage = z.infer<typeof message>;
export type TelegramUpdate = z.infer<typeof update> & { message?: TelegramMessage };

/**
 * Parses an update already proven to come from Telegram; throws ZodError (paths from the body's
 * root) for a shape we do not know, a message's fields included. Other update kinds pass as they are.
 */
export function parseTelegramUpdate(body: unknown): TelegramUpdate {
  const u = update.parse(body) as TelegramUpdate;
  if (u.message === undefined) return u;
  const checked = message.safeParse(u.message);
  if (!checked.success) throw new ZodError(checked.error.issues.map((i) => ({ ...i, path: ['message', ...i.path] })));
  return { ...u, message: checked.data };
}

/** Who the bot is (getMe): its numeric id and @username. */
export interface BotIdentity {
  id: number;
  username: string;
}

type Entity = z.infer<typeof entity>;

const lower = (s: string) => s.toLowerCase();

/** The message's text and its entities (a caption's for media). */
const textOf = (m: TelegramMessage): { text: string; entities: Entity[] } =>
  m.text !== undefined ? { text: m.text, entities: m.entities ?? [] } : { text: m.caption ?? '', entities: m.caption_entities ?? [] };

const slice = (text: string, e: Entity) => text.slice(e.offset, e.offset + e.length);

/** A /command entity at the start, addressed to us: `/cmd` or `/cmd@ourbot`. */
function isOurCommand(text: string, e: Entity, bot: BotIdentity): boolean {
  if (e.type !== 'bot_command' || e.offset !== 0) return false;
  const at = slice(text, e).split('@')[1];
  return at === undefined || lower(at) === lower(bot.username);
}

const mentionsUs = (text: string, e: Entity, bot: BotIdentity) =>
  (e.type === 'mention' && lower(slice(text, e)) === `@${lower(bot.username)}`) || (e.type === 'text_mention' && e.user?.id === bot.id);

/**
 * A reply to one of the bot's messages. In a forum every message of a topic "replies" to the
 * topic's creation message (its id is the thread id): that is not a reply to us.
 */
const repliesToUs = (m: TelegramMessage, bot: BotIdentity) =>
  m.reply_to_message?.from?.id === bot.id && !(m.is_topic_message && m.reply_to_message.message_id === m.message_thread_id);

/** Whether a group message addresses the bot (groupPolicy: mention). */
export function addressesBot(m: TelegramMessage, bot: BotIdentity): boolean {
  const { text, entities } = textOf(m);
  return repliesToUs(m, bot) || entities.some((e) => mentionsUs(text, e, bot) || isOurCommand(text, e, bot));
}

/** The text the model sees: our @mentions removed, `/cmd@ourbot` written `/cmd`. */
export function cleanText(m: TelegramMessage, bot: BotIdentity): string {
  const { text, entities } = textOf(m);
  let out = text;
  // From the end, so earlier offsets stay valid (offsets are UTF-16 units, as JS strings are).
  for (const e of [...entities].sort((a, b) => b.offset - a.offset)) {
    if (mentionsUs(text, e, bot) && e.type === 'mention') out = out.slice(0, e.offset) + out.slice(e.offset + e.length);
    else if (isOurCommand(text, e, bot)) out = slice(text, e).split('@')[0]! + out.slice(e.offset + e.length);
  }
  const cleaned = out.replace(/[ \t]{2,}/g, ' ').trim();
  return cleaned || text.trim();
}

/** Why a message is not someone writing text, or undefined when it is. */
function notUserText(m: TelegramMessage): string | undefined {
  if (m.from === undefined) return 'a message without a sender (a channel post or an anonymous admin)';
  if (m.from.is_bot) return 'a bot message';
  if (m.chat.type === 'channel') return 'a channel post';
  if (!textOf(m).text.trim()) return 'a message without text';
  return undefined;
}

function toInbound(eventId: string, m: TelegramMessage, bot: BotIdentity): InboundEvent {
  const dm = m.chat.type === 'private';
  const topic = !dm && m.is_topic_message === true && m.message_thread_id !== undefined ? m.message_thread_id : undefined;
  const from = m.from!;
  const name = from.username ?? from.first_name;
  return {
    platform: 'telegram',
    eventId,
    chat: { type: dm ? 'dm' : 'group', id: String(m.chat.id), ...(topic !== undefined ? { threadId: String(topic) } : {}) },
    user: { id: String(from.id), ...(name ? { name } : {}) },
    text: cleanText(m, bot),
    // In a group the answer replies to the message it answers (several people talk there); a DM needs no quote.
    replyTarget: { kind: 'telegram', chatId: m.chat.id, ...(topic !== undefined ? { threadId: topic } : {}), ...(dm ? {} : { replyTo: m.message_id }) },
  };
}

/** The update as the gateway acts on it, for an agent's telegram platform settings and its bot. */
export function normaliseTelegram(u: TelegramUpdate, settings: PlatformSettings, bot: BotIdentity): Normalised {
  const m = u.message;
  if (m === undefined) return { kind: 'ignore', reason: 'an update that is not a new message' };
  const why = notUserText(m);
  if (why) return { kind: 'ignore', reason: why };
  const event = toInbound(`${bot.id}:${u.update_id}`, m, bot);
  if (m.chat.type === 'private') return { kind: 'message', event };
  if (settings.groupPolicy === 'off') return { kind: 'ignore', reason: 'groupPolicy is off' };
  if (settings.groupPolicy === 'all' || addressesBot(m, bot)) return { kind: 'message', event };
  return { kind: 'ignore', reason: 'a group message that does not address the bot (groupPolicy: mention)' };
}
