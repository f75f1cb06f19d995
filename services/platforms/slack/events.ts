// Slack Events API envelopes → one InboundEvent, or an answer / an ignore with its reason.
//   url_verification → answer the challenge; app_rate_limited → acknowledged.
//   event_callback:
//     message in an `im` (a DM) → a message;
//     app_mention in a channel → a message when groupPolicy is `mention` (Slack sends the same
//       text as a `message` too when the app subscribes to channel messages: that copy is ignored);
//       a plain message in a thread is a follow-up: a turn when the thread is already ours;
//     message in a channel/group → a message only when groupPolicy is `all`;
//     bot messages, our own echoes (bot_id / the app's own user) and subtypes other than plain
//     user text (edits, deletions, joins, topic changes, …) → ignored.
// A thread (thread_ts) is one session and the reply goes into it; a top-level channel message
// gets its reply in a new thread under the message (Slack's threading convention), and that thread
// is its session. DMs are one session per DM; group DMs (mpim) one per participant. Commands are
// written `!stop`, `!retry`, … (Slack owns `/…`) and reach the agent as `/stop`, `/retry`, ….
import { z, ZodError } from 'zod';
import { BUILTIN_COMMANDS, COMMAND_ALIASES, commandText, UNAVAILABLE_COMMANDS } from '../../core/index.js';
import type { InboundEvent, Normalised, PlatformSettings } from '../adapter.js';

// No bound of its own: the body is bounded (HERMES_MAX_BODY_BYTES), and a text past HERMES_MAX_MESSAGE_CHARS
// is acknowledged and answered with the limit (gateway/platform-admission.ts), never a 400 Slack retries.
const text = z.string();
const id = z.string().min(1).max(64).regex(/^[A-Za-z0-9._-]+$/);

const messageEvent = z.object({
  type: z.enum(['message', 'app_mention']),
  subtype: z.string().optional(),
  user: id.optional(),
  bot_id: z.string().optional(),
  app_id: z.string().optional(),
  text: text.optional(),
  channel: id.optional(),
  channel_type: z.string().optional(),
  ts: id.optional(),
  thread_ts: id.optional(),
}).passthrough();

const envelope = z.discriminatedUnion('type', [
  z.object({ type: z.literal('url_verification'), challenge: z.string().min(1).max(1_000), token: z.string().optional() }),
  // Slack telling us it dropped events for an hour (the app passed 30 000 events/hour): ack it.
  z.object({ type: z.literal('app_rate_limited'), minute_rate_limited: z.number().optional() }).passthrough(),
  z.object({
    type: z.literal('event_callback'),
    event_id: id,
    team_id: id.optional(),
    api_app_id: z.string().optional(),
    authorizations: z.array(z.object({ user_id: z.string().optional(), is_bot: z.boolean().optional() }).passthrough()).optional(),
    event: z.object({ type: z.string() }).passthrough(),
  }).passthrough(),
]);

export type SlackEnvelope = z.infer<typeof envelope>;

const messageTypes: ReadonlySet<string> = new Set(['message', 'app_mention']);

/**
 * Parses a body already proven to come from Slack; throws ZodError (paths from the body's root)
 * for a shape we do not know, a message event's fields included. Other event types pass as they are.
 */
export function parseSlackEnvelope(body: unknown): SlackEnvelope {
  const env = envelope.parse(body);
  if (env.type !== 'event_callback' || !messageTypes.has(env.event.type)) return env;
  const checked = messageEvent.safeParse(env.event);
  if (!checked.success) throw new ZodError(checked.error.issues.map((i) => ({ ...i, path: ['event', ...i.path] })));
  return env;
}

/** Subtypes that are a person writing (file shares and thread broadcasts carry text too). */
const userSubtypes = new Set(['file_share', 'thread_broadcast']);

type MessageEvent = z.infer<typeof messageEvent>;

/** Why a message event is not someone talking to us, or undefined when it is. */
function notUserText(ev: MessageEvent, botUsers: ReadonlySet<string>): string | undefined {
  if (ev.bot_id !== undefined || ev.subtype === 'bot_message') return 'a bot message';
  if (ev.user !== undefined && botUsers.has(ev.user)) return 'our own message';
  if (ev.subtype !== undefined && !userSubtypes.has(ev.subtype)) return `a ${ev.subtype} event`;
  if (ev.user === undefined || ev.channel === undefined || ev.ts === undefined) return 'a message without user, channel or ts';
  if (!ev.text?.trim()) return 'a message without text';
  return undefined;
}

/** Removes mentions of our bot user from the text (the model needs the request, not `<@U…>`). */
function withoutOwnMentions(value: string, botUsers: ReadonlySet<string>): string {
  let out = value;
  for (const u of botUsers) out = out.replaceAll(new RegExp(`<@${u.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\|[^>]*)?>`, 'g'), '');
  return out.trim();
}

/**
 * Slack keeps `/word` for its own slash commands and refuses them inside threads, so on Slack our
 * commands are written `!word …` (as Hermes' Slack adapter does); they reach the agent as `/word …`
 * (Hermes' commands this runtime lacks too, so `!undo` is answered as `/undo` is).
 */
const BANG_COMMAND = new RegExp(`^!(${[...BUILTIN_COMMANDS, ...COMMAND_ALIASES, ...UNAVAILABLE_COMMANDS].join('|')})(?=\\s|$)`, 'i');
const asCommand = (value: string) => commandText(value).replace(BANG_COMMAND, '/$1');

function toInbound(env: Extract<SlackEnvelope, { type: 'event_callback' }>, ev: MessageEvent, dm: boolean, botUsers: ReadonlySet<string>): InboundEvent {
  const channel = ev.channel!;
  // In a channel a top-level message opens a thread under itself (so its follow-ups in the thread are
  // the same session); in a DM or a group DM (mpim) only a thread the user made counts, and group
  // DMs keep SPEC's one session per participant.
  const threadTs = ev.thread_ts ?? (dm || ev.channel_type === 'mpim' ? undefined : ev.ts!);
  return {
    platform: 'slack',
    eventId: env.event_id,
    chat: { type: dm ? 'dm' : 'group', id: channel, ...(threadTs !== undefined ? { threadId: threadTs } : {}) },
    user: { id: ev.user! },
    text: asCommand(withoutOwnMentions(ev.text ?? '', botUsers) || (ev.text ?? '').trim()),
    replyTarget: { kind: 'slack', channel, ...(threadTs !== undefined ? { threadTs } : {}), ...(env.team_id ? { team: env.team_id } : {}) },
  };
}

/** `<@U123>` or `<@U123|name>`: the id must end there, so `<@U123ANIST>` is someone else. */
const mentions = (value: string | undefined, botUsers: ReadonlySet<string>) =>
  [...botUsers].some((u) => (value ?? '').includes(`<@${u}>`) || (value ?? '').includes(`<@${u}|`));

/**
 * A channel message (not a DM) under the platform's groupPolicy. With `mention`, a plain message
 * inside a thread is a follow-up (a turn if the thread is ours), unless it mentions us: then its
 * app_mention copy is the turn. Without our bot's identity in the envelope we cannot tell, and
 * take no follow-ups.
 */
function channelMessage(env: Extract<SlackEnvelope, { type: 'event_callback' }>, ev: MessageEvent, settings: PlatformSettings, botUsers: ReadonlySet<string>): Normalised {
  if (settings.groupPolicy === 'off') return { kind: 'ignore', reason: 'groupPolicy is off' };
  if (settings.groupPolicy === 'all') {
    return ev.type === 'message' ? { kind: 'message', event: toInbound(env, ev, false, botUsers) } : { kind: 'ignore', reason: 'an app_mention (groupPolicy: all handles its message event)' };
  }
  if (ev.type === 'app_mention') return { kind: 'message', event: toInbound(env, ev, false, botUsers) };
  if (ev.thread_ts === undefined || ev.thread_ts === ev.ts) return { kind: 'ignore', reason: 'a channel message without a mention (groupPolicy: mention)' };
  if (botUsers.size === 0 || mentions(ev.text, botUsers)) return { kind: 'ignore', reason: 'a thread message that mentions us (its app_mention is the turn) or an envelope without our bot user' };
  return { kind: 'follow-up', event: toInbound(env, ev, false, botUsers) };
}

/** The envelope as the gateway acts on it, for an agent's slack platform settings. */
export function normaliseSlack(env: SlackEnvelope, settings: PlatformSettings): Normalised {
  if (env.type === 'url_verification') return { kind: 'answer', body: { challenge: env.challenge } };
  if (env.type === 'app_rate_limited') return { kind: 'ignore', reason: 'Slack is dropping this app\'s events for the rest of the hour (app_rate_limited)', warn: true };
  const parsed = messageEvent.safeParse(env.event);
  if (!parsed.success) return { kind: 'ignore', reason: `event type ${env.event.type} is not handled` };
  const ev = parsed.data;
  const botUsers = new Set((env.authorizations ?? []).filter((a) => a.is_bot && a.user_id).map((a) => a.user_id!));
  const why = notUserText(ev, botUsers);
  if (why) return { kind: 'ignore', reason: why };
  const dm = ev.channel_type === 'im' || (ev.channel_type === undefined && ev.channel!.startsWith('D'));
  if (!dm) return channelMessage(env, ev, settings, botUsers);
  return ev.type === 'message' ? { kind: 'message', event: toInbound(env, ev, true, botUsers) } : { kind: 'ignore', reason: 'an app_mention in a DM (its message event is handled)' };
}
