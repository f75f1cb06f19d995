// Discord Gateway MESSAGE_CREATE dispatches → one InboundEvent, or an ignore with its reason.
//   A DM (no guild_id) is a turn. In a guild channel, the platform's groupPolicy decides:
//     mention: the bot among `mentions`, or a reply to one of the bot's messages;
//       a message in a thread that does not address us is a follow-up (a turn in a thread that is
//       already a session of ours, as Hermes follows its threads);
//     all: every message; off: none.
//   Our own messages, other bots' and webhooks' messages, and system messages (joins, pins,
//   thread starters, …) are ignored.
// A thread (channel type 10/11/12) is one session shared by everyone in it; the reply goes into
// the channel the message was written in, as a reply to it (message_reference).
import { z } from 'zod';
import type { InboundEvent, Normalised, PlatformSettings } from '../adapter.js';
import { discordChat, snowflake } from './interactions.js';

const author = z.object({ id: snowflake, username: z.string().max(100).optional(), global_name: z.string().max(100).nullish(), bot: z.boolean().optional() }).passthrough();

const messageCreate = z.object({
  id: snowflake,
  channel_id: snowflake,
  guild_id: snowflake.optional(),
  author,
  content: z.string().max(8_000).default(''),
  type: z.number().int().default(0),
  webhook_id: snowflake.optional(),
  mentions: z.array(z.object({ id: snowflake }).passthrough()).max(200).default([]),
  referenced_message: z.object({ author: z.object({ id: snowflake }).passthrough() }).passthrough().nullish(),
}).passthrough();

export type DiscordMessage = z.infer<typeof messageCreate>;

/** Parses a MESSAGE_CREATE payload (`d`); undefined for a shape we do not know. */
export function parseDiscordMessage(d: unknown): DiscordMessage | undefined {
  const parsed = messageCreate.safeParse(d);
  return parsed.success ? parsed.data : undefined;
}

/** DEFAULT and REPLY: a person writing; every other type is a system message. */
const USER_MESSAGE_TYPES: ReadonlySet<number> = new Set([0, 19]);

/** What the connection knows beyond the message: our bot user, and the channel (threads). */
export interface MessageContext {
  botUserId: string;
  /** The channel's type and parent, when it is a guild channel (looked up by the connector). */
  channel?: { type: number; parentId?: string | null };
}

function notUserText(m: DiscordMessage, botUserId: string): string | undefined {
  if (m.author.id === botUserId) return 'our own message';
  if (m.author.bot === true || m.webhook_id !== undefined) return 'a bot or webhook message';
  if (!USER_MESSAGE_TYPES.has(m.type)) return `a system message (type ${m.type})`;
  return undefined;
}

/** Removes mentions of our bot (`<@id>`, `<@!id>`): the model needs the request, not the ping. */
const withoutOwnMentions = (text: string, botUserId: string) => text.replaceAll(new RegExp(`<@!?${botUserId}>`, 'g'), '').trim();

const addressesUs = (m: DiscordMessage, botUserId: string) => m.mentions.some((u) => u.id === botUserId) || m.referenced_message?.author.id === botUserId;

function toInbound(m: DiscordMessage, ctx: MessageContext): InboundEvent {
  const name = m.author.global_name ?? m.author.username;
  return {
    platform: 'discord',
    eventId: m.id,
    chat: discordChat(m.channel_id, m.guild_id === undefined, ctx.channel),
    user: { id: m.author.id, ...(name ? { name } : {}) },
    text: withoutOwnMentions(m.content, ctx.botUserId) || m.content.trim(),
    replyTarget: { kind: 'discord', channelId: m.channel_id, replyTo: m.id },
  };
}

/** The message as the connector acts on it, for an agent's discord platform settings. */
export function normaliseDiscordMessage(m: DiscordMessage, settings: PlatformSettings, ctx: MessageContext): Normalised {
  const why = notUserText(m, ctx.botUserId);
  if (why) return { kind: 'ignore', reason: why };
  if (!m.content.trim()) {
    // Discord blanks the content of guild messages that do not mention us unless the app has the
    // Message Content intent: worth telling the operator when it happens in a DM or on a mention.
    return { kind: 'ignore', reason: 'a message without text (attachments only, or the Message Content intent is off)', warn: m.guild_id === undefined || addressesUs(m, ctx.botUserId) };
  }
  if (m.guild_id === undefined) return { kind: 'message', event: toInbound(m, ctx) };
  if (settings.groupPolicy === 'off') return { kind: 'ignore', reason: 'groupPolicy is off' };
  if (settings.groupPolicy === 'all' || addressesUs(m, ctx.botUserId)) return { kind: 'message', event: toInbound(m, ctx) };
  const event = toInbound(m, ctx);
  if (event.chat.threadId !== undefined) return { kind: 'follow-up', event };
  return { kind: 'ignore', reason: 'a channel message that neither mentions nor replies to us (groupPolicy: mention)' };
}
