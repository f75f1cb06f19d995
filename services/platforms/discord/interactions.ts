// Discord interactions (the HTTP endpoint) → one InboundEvent, or an answer Discord shows at once.
//   PING (type 1) → PONG (type 1);
//   APPLICATION_COMMAND (type 2) `/ask prompt:<text>` → a turn: the gateway answers with a deferred
//     response (type 5: "<bot> is thinking…") and the reply replaces it through the interaction's
//     webhook, which Discord honours for 15 minutes (after that: a channel message, send.ts);
//   other commands, components, autocomplete and modals → an ephemeral (or empty) answer, no turn.
// The session follows the conversation the command was typed in: a DM by its channel, a guild
// channel per participant (SPEC's default), a thread (channel types 10/11/12) shared by everyone.
import { InteractionResponseFlags, InteractionResponseType, InteractionType } from 'discord-interactions';
import { z } from 'zod';
import type { ChatRef, InboundEvent, Normalised } from '../adapter.js';

/** Discord: an interaction token may be used for 15 minutes after the interaction. */
export const INTERACTION_TOKEN_SECONDS = 15 * 60;

export const snowflake = z.string().regex(/^\d{1,20}$/);
const discordUser = z.object({ id: snowflake, username: z.string().max(100).optional(), global_name: z.string().max(100).nullish(), bot: z.boolean().optional() }).passthrough();

const option = z.object({ name: z.string().max(100), type: z.number().int(), value: z.unknown().optional() }).passthrough();

const interaction = z.object({
  id: snowflake,
  application_id: snowflake,
  type: z.number().int().min(1).max(5),
  token: z.string().min(1).max(1_000).optional(),
  guild_id: snowflake.optional(),
  channel_id: snowflake.optional(),
  channel: z.object({ id: snowflake, type: z.number().int(), parent_id: snowflake.nullish() }).passthrough().optional(),
  member: z.object({ user: discordUser }).passthrough().optional(),
  user: discordUser.optional(),
  data: z.object({ name: z.string().max(100).optional(), options: z.array(option).max(25).optional() }).passthrough().optional(),
}).passthrough();

export type DiscordInteraction = z.infer<typeof interaction>;

/** Parses a body already proven to come from Discord; throws ZodError for a shape we do not know. */
export const parseDiscordInteraction = (body: unknown): DiscordInteraction => interaction.parse(body);

/** Channel types of threads (announcement, public, private): one session per thread. */
export const THREAD_CHANNEL_TYPES: ReadonlySet<number> = new Set([10, 11, 12]);

/** The conversation a channel is, given what we know of it. */
export function discordChat(channelId: string, dm: boolean, channel?: { type: number; parentId?: string | null }): ChatRef {
  if (dm) return { type: 'dm', id: channelId };
  if (channel && THREAD_CHANNEL_TYPES.has(channel.type)) return { type: 'group', id: channel.parentId ?? channelId, threadId: channelId };
  return { type: 'group', id: channelId };
}

const ephemeral = (content: string) => ({ type: InteractionResponseType.CHANNEL_MESSAGE_WITH_SOURCE, data: { content, flags: InteractionResponseFlags.EPHEMERAL } });

/** The answer Discord gets for an admitted /ask: "thinking…", the reply follows through the webhook. */
export const deferredResponse = { type: InteractionResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE } as const;
/** "Thinking…" only the user sees; the answer that replaces it is ephemeral too (a refusal is nobody else's business). */
export const deferredEphemeralResponse = { type: InteractionResponseType.DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE, data: { flags: 64 } } as const;

function askPrompt(i: DiscordInteraction): string | undefined {
  const value = i.data?.options?.find((o) => o.name === 'prompt')?.value;
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

const displayName = (u: { username?: string | undefined; global_name?: string | null | undefined }) => u.global_name ?? u.username;

/** An `/ask` with its prompt → the turn; undefined when Discord left out who, where or the token. */
function askEvent(i: DiscordInteraction, prompt: string, nowMs: number): InboundEvent | undefined {
  const user = i.member?.user ?? i.user;
  const channelId = i.channel_id ?? i.channel?.id;
  if (!user || !channelId || !i.token) return undefined;
  const name = displayName(user);
  return {
    platform: 'discord',
    eventId: i.id,
    chat: discordChat(channelId, i.guild_id === undefined, i.channel ? { type: i.channel.type, parentId: i.channel.parent_id } : undefined),
    user: { id: user.id, ...(name ? { name } : {}) },
    text: prompt,
    replyTarget: {
      kind: 'discord',
      channelId,
      interaction: { applicationId: i.application_id, token: i.token, expiresAt: nowMs + INTERACTION_TOKEN_SECONDS * 1_000 },
    },
  };
}

/** The interaction as the gateway acts on it. `nowMs` dates the interaction token's expiry. */
export function normaliseDiscordInteraction(i: DiscordInteraction, nowMs: number): Normalised {
  if (i.type === InteractionType.PING) return { kind: 'answer', body: { type: InteractionResponseType.PONG } };
  if (i.type === InteractionType.APPLICATION_COMMAND_AUTOCOMPLETE) return { kind: 'answer', body: { type: InteractionResponseType.APPLICATION_COMMAND_AUTOCOMPLETE_RESULT, data: { choices: [] } } };
  if (i.type !== InteractionType.APPLICATION_COMMAND) return { kind: 'answer', body: ephemeral('This agent only answers /ask and messages.') };
  if (i.data?.name !== 'ask') return { kind: 'answer', body: ephemeral(`This agent has no /${i.data?.name ?? ''} command; use /ask.`) };
  const prompt = askPrompt(i);
  if (!prompt) return { kind: 'answer', body: ephemeral('Tell /ask what to do: /ask prompt: <your question>.') };
  const event = askEvent(i, prompt, nowMs);
  return event ? { kind: 'message', event } : { kind: 'ignore', reason: 'an /ask without a user, channel or token', warn: true };
}
