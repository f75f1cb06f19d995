// The contract every chat platform implements (ARCHITECTURE §7, issue 11). Inbound, in order:
//   verify (signature / secret token, on the raw bytes) → normalise to one InboundEvent →
//   authorise → session key → admission (the gateway's generic part, gateway/platform-admission.ts).
// Outbound, for the delivery worker: send (split to the platform's limit), edit, a typed
// RateLimited error that the ledger turns into `not_before` without spending an attempt, and a
// typed Undeliverable error (the chat is gone or closed to the bot) that it abandons at once.
// One module per platform (slack/, telegram/); Discord and Teams add theirs beside them.
import { BUILTIN_COMMANDS, type CompiledAgent, type SecretRef } from '../core/index.js';

export type PlatformSettings = NonNullable<CompiledAgent['platforms']>[number];

/** Where a chat message was written: a DM, or a group/channel (optionally inside a thread). */
export interface ChatRef {
  type: 'dm' | 'group';
  id: string;
  /** The thread the message belongs to (Slack thread_ts, Telegram topic): a thread is one session. */
  threadId?: string;
}

/** One inbound chat message, whatever the platform. */
export interface InboundEvent {
  platform: string;
  /** The platform's own id of this delivery (Slack event_id): a retry with the same id is one admission. */
  eventId: string;
  chat: ChatRef;
  user: { id: string; name?: string };
  text: string;
  /** Where the reply goes; stored on the admission (and so on its delivery obligation) as JSON. */
  replyTarget: ReplyTarget;
}

/** A platform's reply address, e.g. `{ kind: 'slack', channel, threadTs }`. */
export interface ReplyTarget {
  kind: string;
  [field: string]: unknown;
}

/** What the gateway does with one verified request. */
export type Normalised =
  | { kind: 'message'; event: InboundEvent }
  /** Answer the platform directly, admit nothing (Slack url_verification). */
  | { kind: 'answer'; body: unknown }
  /**
   * A group message inside a thread that did not address us: a turn only when that thread is
   * already one of the agent's sessions (the bot took part in it), as Hermes follows its threads.
   */
  | { kind: 'follow-up'; event: InboundEvent }
  /** Acknowledge and drop: bot messages, our own echoes, edits, joins, unaddressed group chatter. */
  | { kind: 'ignore'; reason: string; /** Worth an operator's attention (logged as a warning). */ warn?: boolean };

/** The outcome of verification: a reason when the request is refused (always a 401, nothing touched). */
export type Verified = { ok: true } | { ok: false; reason: string };

/** Reads a secret by reference (services/agent SecretResolver fits). */
export interface SecretReader {
  resolve(namespace: string, ref: SecretRef): Promise<string | undefined>;
}

/**
 * SPEC's order: platform allow-all → platform allowlist → DM pairing → default deny. A session id
 * routes and never authorises. `paired`: an owner approved this user's pairing request on this
 * platform (the gateway looks it up only when allow-all and the allowlist did not let them in).
 * Refused with `pairing: true`: a DM from an unknown user of a platform with dmPairing on, who
 * gets a pairing code instead of the refusal.
 */
export type Authorisation =
  | { allowed: true; by: 'allow-all' | 'allowlist' | 'pairing' }
  | { allowed: false; reason: 'not-allowed'; pairing: boolean };

/** Allow-all or the allowlist let this user in, without asking the pairing store. */
export const allowedWithoutPairing = (settings: PlatformSettings, event: InboundEvent) =>
  settings.allowAll || settings.allowlist.includes(event.user.id);

export function authorise(settings: PlatformSettings, event: InboundEvent, paired = false): Authorisation {
  if (settings.allowAll) return { allowed: true, by: 'allow-all' };
  if (settings.allowlist.includes(event.user.id)) return { allowed: true, by: 'allowlist' };
  if (paired) return { allowed: true, by: 'pairing' };
  return { allowed: false, reason: 'not-allowed', pairing: settings.dmPairing && event.chat.type === 'dm' };
}

/** Keeps platform ids from forging extra `:`-separated key parts. */
const segment = (s: string) => s.replace(/%/g, '%25').replace(/:/g, '%3A');

export interface SessionKeyOptions {
  /** Groups: one session per participant (SPEC default), or one for the whole chat. @defaultValue true */
  groupPerUser?: boolean;
}

/**
 * `agent:<ns>/<name>:<platform>:<chat type>:<chat id>[:<thread>][:<user>]` (ARCHITECTURE §7):
 * DMs by chat; groups per participant by default; threads shared by everyone in them.
 */
export function platformSessionKey(agent: { namespace: string; name: string }, event: InboundEvent, opts: SessionKeyOptions = {}): string {
  const { chat } = event;
  let key = `agent:${agent.namespace}/${agent.name}:${event.platform}:${chat.type}:${segment(chat.id)}`;
  if (chat.threadId !== undefined) return `${key}:${segment(chat.threadId)}`;
  if (chat.type === 'group' && (opts.groupPerUser ?? true)) key += `:${segment(event.user.id)}`;
  return key;
}

/** The polite refusal an unauthorised user gets (once), never a model call. */
export const refusalText = 'Sorry, I can only talk with people the owner of this agent has allowed. Ask them to add your user id to the allowlist.';

/** Thrown by a sender when the platform asked us to slow down: the ledger waits `retryAfterSeconds`, no attempt spent. */
export class RateLimited extends Error {
  override name = 'RateLimited';
  constructor(readonly retryAfterSeconds: number, detail = '') {
    super(`the platform rate-limited the send; retry after ${retryAfterSeconds} s${detail ? ` (${detail})` : ''}`);
  }
}

/**
 * Thrown by a sender when the platform refused the reply for good: the conversation is gone or
 * closed to the bot (a deleted or archived channel, a bot removed from it, a user who blocked it,
 * a callback URL that no longer exists). No retry can deliver it, so the ledger abandons the
 * obligation at once instead of spending its remaining attempts over minutes. Refusals an operator
 * can mend while the retries run (a revoked token, a missing scope, an outage) are not this.
 */
export class Undeliverable extends Error {
  override name = 'Undeliverable';
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`the platform refused the reply for good: ${detail}`, options);
  }
}

/** A reference to a sent message, for later edits. */
export interface SentMessage {
  id: string;
}

/** The outbound half of an adapter, used by the delivery worker. */
export interface PlatformSender {
  /** The platform's message length limit; longer replies are split. */
  readonly maxMessageChars: number;
  /** Sends `text` (split as needed) to `target`; throws RateLimited or another error. */
  send(target: ReplyTarget, text: string, signal: AbortSignal): Promise<SentMessage[]>;
  /** Replaces the text of a message sent before (progress messages). */
  edit(target: ReplyTarget, message: SentMessage, text: string, signal: AbortSignal): Promise<void>;
  /** Deletes a message sent before (the "working…" message once the reply is out). Optional. */
  remove?(target: ReplyTarget, message: SentMessage, signal: AbortSignal): Promise<void>;
  /** Shows the bot "typing…" in the target's conversation for a few seconds (progress where the platform has it). Optional. */
  typing?(target: ReplyTarget, signal: AbortSignal): Promise<void>;
}

/** A Markdown code fence line (``` with an optional language tag). */
const FENCE_LINE = /^ {0,3}```/;

/** The opening line of the code block still open at the end of `text`, or undefined when none is. */
function openFence(text: string): string | undefined {
  let open: string | undefined;
  for (const line of text.split('\n')) if (FENCE_LINE.test(line)) open = open === undefined ? line.trim() : undefined;
  return open;
}

/** Where to cut `window` (all of it fits one piece): paragraph, line, then word boundaries, else its end. */
function cutPoint(window: string, limit: number, min: number): number {
  let cut = window.lastIndexOf('\n\n');
  if (cut < min) cut = window.lastIndexOf('\n');
  if (cut < min) cut = window.lastIndexOf(' ');
  if (cut < min) cut = window.length;
  const code = window.charCodeAt(cut - 1);
  if (cut === limit && code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return cut;
}

/**
 * Splits `text` into pieces of at most `limit` characters, preferring paragraph, then line, then
 * word boundaries, and never cutting a UTF-16 surrogate pair. A cut inside a Markdown code block
 * closes it at the end of the piece and opens it again (with its language tag) at the start of
 * the next, as Hermes' adapters do, so each piece renders as code on Slack, Discord and Teams;
 * inside a code block only the line break at the cut is dropped, not the next line's indentation.
 * The same text always gives the same pieces (the ledger resends only those not sent yet).
 */
export function splitMessage(text: string, limit: number): string[] {
  if (text.length <= limit) return [text];
  const out: string[] = [];
  let rest = text;
  let reopen = '';
  while (reopen.length + rest.length > limit) {
    const body = reopen + rest;
    // Room for the "\n```" that closes a block left open; the reopened fence must fit well inside.
    const room = limit - 4;
    let cut = cutPoint(body.slice(0, room), room, Math.max(room / 2, reopen.length + 1));
    let piece = body.slice(0, cut).trimEnd();
    const open = openFence(piece);
    if (open === undefined) {
      // Nothing left open: the full limit may be used, as before.
      cut = cutPoint(body.slice(0, limit), limit, Math.max(limit / 2, reopen.length + 1));
      piece = body.slice(0, cut).trimEnd();
    }
    const stillOpen = openFence(piece);
    out.push(stillOpen === undefined ? piece : `${piece}\n\`\`\``);
    rest = body.slice(cut);
    rest = stillOpen === undefined ? rest.replace(/^\s+/, '') : rest.replace(/^[ \t]*\n/, '');
    reopen = stillOpen === undefined ? '' : stillOpen.length > limit / 4 ? '```\n' : `${stillOpen}\n`;
    // The cut fell just before the block's own closing fence: the piece closed it already.
    if (reopen && FENCE_LINE.test(rest)) [reopen, rest] = ['', rest.replace(/^[^\n]*\n?/, '')];
  }
  if (rest) out.push(reopen + rest);
  return out.filter((p) => p.trim().length > 0);
}

/** A notice that names a built-in command (core BUILTIN_COMMANDS: the gateway's and the worker's, /memory, /curator … too) is reworded per platform. */
const COMMAND_MENTION = new RegExp(`(^|[\\s([\`"'«“])/(${[...BUILTIN_COMMANDS].join('|')})(?=$|[\\s.,;:!?)\\]\`"'»”])`, 'gim');

/**
 * Rewrites the commands a text names (`/retry`, `/new`, …) as users write them on a platform whose
 * prefix is not `/` (Slack: `!retry`, since Slack keeps `/…` for its own commands). Only whole
 * command words after a space, an opening bracket or quote are touched (and before a closing one:
 * `[interrupted: stopped by /stop]`); paths such as `/new/file` are not.
 */
export function phraseCommands(text: string, prefix: string): string {
  return prefix === '/' ? text : text.replace(COMMAND_MENTION, (_m, before: string, name: string) => `${before}${prefix}${name}`);
}
