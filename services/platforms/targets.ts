// Explicit delivery targets (send_message, issue 14): `platform:chat[:thread]` as Hermes writes
// them (telegram:-1001234:17, slack:C012AB3CD:1712345678.000100, discord:123456789), parsed and
// turned into the platform's reply target, and checked against the Agent's spec.messaging.
import type { CompiledAgent } from '../core/index.js';
import type { ReplyTarget } from './adapter.js';

/** Platforms send_message can push to with the Agent's own credentials. */
export const SENDABLE_PLATFORMS: readonly string[] = ['slack', 'telegram', 'discord'];

export interface ExplicitTarget {
  platform: string;
  chat: string;
  thread?: string;
}

/** The canonical text of a target. */
export const targetText = (t: ExplicitTarget): string => `${t.platform}:${t.chat}${t.thread ? `:${t.thread}` : ''}`;

/** `platform:chat[:thread]` → its parts, or undefined when it is not written that way. */
export function parseTarget(text: string): ExplicitTarget | undefined {
  const m = /^([a-z][a-z0-9-]*):([^:\s]+)(?::([^:\s]+))?$/.exec(text.trim());
  if (!m) return undefined;
  return { platform: m[1]!, chat: m[2]!, ...(m[3] ? { thread: m[3] } : {}) };
}

/** The platform's reply target for `t`, or a reason it cannot be one. */
export function replyTargetOf(t: ExplicitTarget): { target: ReplyTarget } | { error: string } {
  switch (t.platform) {
    case 'slack':
      return { target: { kind: 'slack', channel: t.chat, ...(t.thread ? { threadTs: t.thread } : {}) } };
    case 'telegram': {
      if (t.thread && !/^\d+$/.test(t.thread)) return { error: `a Telegram topic id is a number, got "${t.thread}"` };
      const chatId = /^-?\d+$/.test(t.chat) ? Number(t.chat) : t.chat;
      return { target: { kind: 'telegram', chatId, ...(t.thread ? { threadId: Number(t.thread) } : {}) } };
    }
    case 'discord':
      // A Discord thread is a channel of its own: the message goes to the thread's id.
      return { target: { kind: 'discord', channelId: t.thread ?? t.chat } };
    default:
      return { error: `send_message cannot send to ${t.platform} (it sends to ${SENDABLE_PLATFORMS.join(', ')})` };
  }
}

type Messaging = NonNullable<CompiledAgent['messaging']>;

/**
 * The explicit target `name` stands for: a home channel's name, a bare platform (its first home
 * channel there, as Hermes' `<platform>` delivery), or `platform:chat[:thread]` itself.
 */
export function resolveTarget(messaging: Messaging, name: string): { target: ExplicitTarget; home: boolean } | { error: string } {
  const wanted = name.trim();
  const home = messaging.homeChannels.find((h) => h.name === wanted) ?? (wanted.includes(':') ? undefined : messaging.homeChannels.find((h) => parseTarget(h.target)?.platform === wanted));
  const text = home?.target ?? wanted;
  const target = parseTarget(text);
  if (!target) return { error: `"${wanted}" is neither a home channel (${messaging.homeChannels.map((h) => h.name).join(', ') || 'none'}) nor a target written platform:chat_id[:thread_id]` };
  return { target, home: home !== undefined };
}

/**
 * Platforms whose thread is addressed as a channel of its own (the message goes to the thread's id
 * alone, not to the chat): `platform:chat` cannot vouch for `platform:chat:<any id>`, since nothing
 * ties that id to the chat — it could be any channel the bot can reach.
 */
const THREAD_IS_ITS_OWN_CHANNEL: ReadonlySet<string> = new Set(['discord']);

/**
 * Whether the Agent allows `t`: a home channel (by name, or its target written out), an allowed
 * target exactly, `platform:*`, or a thread of an allowed chat where the thread is addressed within
 * that chat (Slack, Telegram; not Discord, whose thread must be listed itself).
 */
export function targetAllowed(messaging: Messaging, t: ExplicitTarget, home: boolean): boolean {
  if (home) return true;
  const allowed = new Set([...messaging.allowedTargets, ...messaging.homeChannels.map((h) => h.target)].map((a) => a.trim()));
  if (allowed.has(targetText(t)) || allowed.has(`${t.platform}:*`)) return true;
  return t.thread !== undefined && !THREAD_IS_ITS_OWN_CHANNEL.has(t.platform) && allowed.has(`${t.platform}:${t.chat}`);
}
