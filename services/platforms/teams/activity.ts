// Bot Framework activities from Microsoft Teams → one InboundEvent, or an ignore with its reason.
//   message in a personal chat (conversationType `personal`) → a DM, one session per chat;
//   message in a group chat (`groupChat`) → a group message under groupPolicy (mention: only when
//     the bot is mentioned in `entities`), one session per participant (SPEC);
//   message in a channel (`channel`) → the conversation id carries the thread as
//     `19:…@thread.tacv2;messageid=<root>`: the thread is one session, and the reply goes into it;
//     under groupPolicy `mention` a message that does not mention the bot is a follow-up (a turn
//     only in a thread the bot already took part in);
//   activities of other Bot Framework channels (Web Chat, Direct Line, …: their clients choose their
//     own `from`), the bot's own messages, other activity types (conversationUpdate, typing, reactions, invokes)
//     and messages without text → ignored.
// The `<at>Bot</at>` text of the bot's mention is removed before the model sees the message.
// The dedupe id is the activity id within its conversation: a retried activity is one admission.
import { z } from 'zod';
import type { InboundEvent, Normalised, PlatformSettings } from '../adapter.js';
import type { TeamsVerified } from './auth.js';

const account = z.object({ id: z.string().min(1).max(256), name: z.string().max(256).optional(), aadObjectId: z.string().max(64).optional() }).passthrough();

const activitySchema = z.object({
  type: z.string().min(1).max(64),
  id: z.string().min(1).max(256).optional(),
  serviceUrl: z.string().url().max(2_048),
  channelId: z.string().min(1).max(64),
  from: account,
  recipient: account,
  conversation: z.object({
    id: z.string().min(1).max(1_024),
    conversationType: z.string().max(32).optional(),
    isGroup: z.boolean().optional(),
    tenantId: z.string().max(64).optional(),
  }).passthrough(),
  // Bounded by the body (HERMES_MAX_BODY_BYTES); past HERMES_MAX_MESSAGE_CHARS it is answered with the limit.
  text: z.string().optional(),
  entities: z.array(z.object({ type: z.string().max(64), mentioned: account.optional(), text: z.string().max(1_024).optional() }).passthrough()).max(256).optional(),
}).passthrough();

export type TeamsActivity = z.infer<typeof activitySchema>;

/** Parses a body whose token was verified; throws ZodError (paths from the body's root) for a shape we do not know. */
export const parseTeamsActivity = (body: unknown): TeamsActivity => activitySchema.parse(body);

const trimSlash = (url: string) => url.replace(/\/+$/, '');

/**
 * The checks that tie a verified token to this activity (Bot Framework SDK, ChannelValidation):
 * the token's `serviceurl` claim is the activity's serviceUrl (so replies go only where the Bot
 * Framework said), and a key with endorsements is endorsed for the activity's channel.
 */
export function checkActivityClaims(verified: Extract<TeamsVerified, { ok: true }>, activity: TeamsActivity): { ok: true } | { ok: false; reason: string } {
  const claim = verified.claims.serviceurl ?? verified.claims.serviceUrl;
  if (typeof claim !== 'string') return { ok: false, reason: 'the token has no serviceurl claim' };
  if (trimSlash(claim) !== trimSlash(activity.serviceUrl)) return { ok: false, reason: 'the token\'s serviceurl claim is not the activity\'s serviceUrl' };
  if (verified.endorsements && !verified.endorsements.includes(activity.channelId)) return { ok: false, reason: `the signing key is not endorsed for channel "${activity.channelId}"` };
  return { ok: true };
}

/** The Entra tenant an activity comes from (`conversation.tenantId`, else `channelData.tenant.id`), when it names one. */
export function activityTenant(activity: TeamsActivity): string | undefined {
  const channelData = (activity as { channelData?: { tenant?: { id?: unknown } } }).channelData;
  const fromChannel = channelData?.tenant?.id;
  return activity.conversation.tenantId ?? (typeof fromChannel === 'string' ? fromChannel : undefined);
}

/** Where a Teams reply goes: the connector (serviceUrl, verified) and the conversation (with its thread). */
export interface TeamsTarget {
  kind: 'teams';
  serviceUrl: string;
  conversationId: string;
  [field: string]: unknown;
}

const THREAD = ';messageid=';

/** The Bot Framework channel id of Microsoft Teams: the only one a `teams` platform takes. */
export const TEAMS_CHANNEL_ID = 'msteams';

type ChatKind = 'personal' | 'groupChat' | 'channel';

function chatKind(a: TeamsActivity): ChatKind {
  const t = a.conversation.conversationType;
  if (t === 'personal' || t === 'groupChat' || t === 'channel') return t;
  if (a.conversation.id.includes(THREAD)) return 'channel';
  return a.conversation.isGroup ? 'groupChat' : 'personal';
}

const mentionsOfBot = (a: TeamsActivity) => (a.entities ?? []).filter((e) => e.type === 'mention' && e.mentioned?.id === a.recipient.id);

/** The text without the bot's `<at>…</at>` mentions. */
function withoutBotMentions(a: TeamsActivity): string {
  let text = a.text ?? '';
  for (const m of mentionsOfBot(a)) if (m.text) text = text.replaceAll(m.text, ' ');
  return text.replace(/[ \t]+/g, ' ').trim();
}

function toInbound(a: TeamsActivity, kind: ChatKind): InboundEvent {
  const conv = a.conversation.id;
  let chat: InboundEvent['chat'];
  let conversationId = conv;
  if (kind === 'channel') {
    const [channel = conv, root] = conv.split(THREAD);
    const thread = root || a.id!;
    chat = { type: 'group', id: channel, threadId: thread };
    conversationId = `${channel}${THREAD}${thread}`;
  } else chat = { type: kind === 'personal' ? 'dm' : 'group', id: conv };
  const target: TeamsTarget = { kind: 'teams', serviceUrl: a.serviceUrl, conversationId, ...(a.conversation.tenantId ? { tenantId: a.conversation.tenantId } : {}) };
  return {
    platform: 'teams',
    eventId: `${conv}|${a.id}`,
    chat,
    // The Entra (AAD) object id is what admins know and list; the channel account id otherwise.
    user: { id: a.from.aadObjectId ?? a.from.id, ...(a.from.name ? { name: a.from.name } : {}) },
    text: withoutBotMentions(a),
    replyTarget: target,
  };
}

/** The activity as the gateway acts on it, for an agent's teams platform settings. */
export function normaliseTeams(a: TeamsActivity, settings: PlatformSettings): Normalised {
  // The Bot Framework signs the activities of every channel of the bot (Web Chat is on for every
  // Azure Bot, Direct Line on many) with keys endorsed for them all; there the client chooses its
  // own `from`, so a Web Chat user could name an allowlisted Teams person's AAD id. Only Teams speaks here.
  if (a.channelId !== TEAMS_CHANNEL_ID) return { kind: 'ignore', reason: `an activity of the Bot Framework channel "${a.channelId}", not Microsoft Teams (msteams)`, warn: true };
  if (a.type !== 'message') return { kind: 'ignore', reason: `a ${a.type} activity` };
  if (a.from.id === a.recipient.id) return { kind: 'ignore', reason: 'our own message' };
  if (!a.id) return { kind: 'ignore', reason: 'a message without an id', warn: true };
  const kind = chatKind(a);
  const event = toInbound(a, kind);
  if (!event.text) return { kind: 'ignore', reason: 'a message without text' };
  if (kind === 'personal') return { kind: 'message', event };
  if (settings.groupPolicy === 'off') return { kind: 'ignore', reason: 'groupPolicy is off' };
  if (settings.groupPolicy === 'all' || mentionsOfBot(a).length > 0) return { kind: 'message', event };
  if (kind === 'channel') return { kind: 'follow-up', event };
  return { kind: 'ignore', reason: 'a group chat message without a mention (groupPolicy: mention)' };
}
