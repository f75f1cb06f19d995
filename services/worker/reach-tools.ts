// The turn's reach beyond its own reply (issue 14): clarify (ask the user, wait durably) and
// send_message (other chats, within the Agent's allowed targets). Unattended turns (cron, a
// webhook without a callback, API calls with their own conversation: nobody answers a question
// there) are not offered clarify.
import type { Redis } from 'ioredis';
import type { Admission, CompiledAgent, Config, Db, Logger, Queues } from '../core/index.js';
import type { Tool, ToolContext } from '../agent/index.js';
import { DurableClarify, clarifyTimeoutOf } from './clarify.js';
import { turnMessaging } from './messaging.js';
import { hasCallerConversation } from './turn-context.js';
import { platformOf } from '../platforms/index.js';

/** An API turn whose caller sees only its reply: a chat completion (admitApiMessage's replyOnly). */
const replyOnlyApiTurn = (adm: Pick<Admission, 'platform'> & Partial<Pick<Admission, 'replyTarget'>>): boolean =>
  adm.platform === 'api' && (adm.replyTarget as { replyOnly?: unknown } | null)?.replyOnly === true;

/**
 * Turns where nobody could answer a question: cron (unattended), a signed webhook whose replies go
 * nowhere (no callbackUrl: only stored), and OpenAI-style API calls that bring their own
 * conversation, and every chat completion (the caller waits for one response and sees no question,
 * with or without X-Hermes-Session-Id: Hermes' API server offers no clarify either).
 */
export const unattendedTurn = (agent: CompiledAgent, adm: Pick<Admission, 'platform' | 'callerHistory'> & Partial<Pick<Admission, 'replyTarget'>>): boolean =>
  adm.platform === 'cron' || (adm.platform === 'webhook' && !platformOf(agent, 'webhook')?.callbackUrl) || hasCallerConversation(adm) || replyOnlyApiTurn(adm);

/** Pub/sub for the clarify events of message-API followers, when the worker has Redis. */
export const clarifyEvents = (deps: { config: Config; redis?: Redis }) => (deps.redis ? { events: { redis: deps.redis, prefix: deps.config.HERMES_QUEUE_PREFIX } } : {});

export interface TurnReach {
  /** Tools this turn must not be offered. */
  withheld: (t: Tool) => boolean;
  context: Pick<ToolContext, 'clarify' | 'messaging'>;
}

export function turnReach(deps: { db: Db; log: Logger; config: Config; queues?: Queues; redis?: Redis }, agent: CompiledAgent, adm: Admission): TurnReach {
  const unattended = unattendedTurn(agent, adm);
  const { queues } = deps;
  if (!queues) return { withheld: (t) => unattended && t.name === 'clarify', context: {} };
  const clarify = unattended ? undefined : new DurableClarify({ db: deps.db, queues, log: deps.log, pollMs: deps.config.HERMES_APPROVAL_POLL_MS, ...clarifyEvents(deps) }, adm, clarifyTimeoutOf(agent));
  const messaging = turnMessaging({ db: deps.db, queues, log: deps.log }, agent, adm);
  return {
    withheld: (t) => unattended && t.name === 'clarify',
    context: { ...(clarify ? { clarify } : {}), ...(messaging ? { messaging } : {}) },
  };
}
