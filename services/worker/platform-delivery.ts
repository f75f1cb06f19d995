// Delivery adapters of the chat platforms: each resolves the agent's platform settings from its
// current revision and the bot token by reference (ADR 0001: the Secret named by the platform's
// credentials, in the Agent's namespace), then sends through the platform module.
import type { AgentCache, Config, Obligation } from '../core/index.js';
import { discord, phraseCommands, platformOf, slack, teams, telegram, webhook, type PlatformSender, type PlatformSettings, type ReplyTarget } from '../platforms/index.js';
import type { SecretResolver } from '../agent/index.js';
import type { DeliveryAdapter, ProgressChannel, ProgressRef } from './delivery.js';

export interface PlatformDeliveryDeps {
  config: Config;
  agents: AgentCache;
  secrets: SecretResolver;
}

/**
 * The reply cannot be sent as configured (no such platform, no bot token): a failed attempt,
 * retried like any other (an operator may mend the Agent or its Secret meanwhile) — unlike the
 * platforms' Undeliverable, a platform's refusal for good.
 */
export class NotConfigured extends Error {
  override name = 'NotConfigured';
}

/** The agent's current settings for `platform` and the bot token under `tokenKey` of its Secret. */
async function platformToken(deps: PlatformDeliveryDeps, ob: Pick<Obligation, 'agentId'>, platform: string, tokenKey: string): Promise<{ settings: PlatformSettings; token: string }> {
  const agent = await deps.agents.getById(ob.agentId);
  const settings = agent ? platformOf(agent.compiled, platform) : undefined;
  if (!agent || !settings) throw new NotConfigured(`agent ${ob.agentId} has no ${platform} platform any more`);
  const namespace = agent.compiled.agent.namespace;
  const ref = { name: settings.credentialsSecret, key: tokenKey };
  const token = await deps.secrets.resolve(namespace, ref);
  if (!token) throw new NotConfigured(`Secret "${ref.name}" key "${ref.key}" in namespace ${namespace} was not found (read from ${deps.secrets.source})`);
  return { settings, token };
}

export function slackDelivery(deps: PlatformDeliveryDeps): DeliveryAdapter {
  /** The agent's Slack sender: its current settings and bot token (by reference). */
  async function senderFor(agentId: string): Promise<slack.SlackSender> {
    const { settings, token } = await platformToken(deps, { agentId }, 'slack', slack.SLACK_KEYS.botToken);
    return new slack.SlackSender({ token, apiUrl: slack.slackApiUrl(settings, deps.config.HERMES_SLACK_API_URL) });
  }
  const target = (t: unknown) => t as { kind: string };
  return {
    // The ledger splits and records each piece (a retry sends only the rest).
    maxMessageChars: slack.SLACK_MAX_MESSAGE_CHARS,
    async send(ob: Obligation, text: string, signal: AbortSignal): Promise<void> {
      // Notices name commands as `/retry`; on Slack they are written `!retry`.
      await (await senderFor(ob.agentId)).send(target(ob.target), phraseCommands(text, slack.SLACK_COMMAND_PREFIX), signal);
    },
    progress: {
      post: async (r, text, signal) => (await (await senderFor(r.agentId)).send(target(r.target), text, signal))[0]?.id,
      edit: async (r, id, text, signal) => (await senderFor(r.agentId)).edit(target(r.target), { id }, text, signal),
      remove: async (r, id, signal) => (await senderFor(r.agentId)).remove(target(r.target), { id }, signal),
    },
  };
}

/** What a typing indicator's `post` returns: there is no message to edit or remove (the ledger records it all the same). */
export const TYPING_PROGRESS_ID = 'typing';

/**
 * Progress as the platform's typing indicator (Telegram, Discord, Teams): shown once the turn has
 * run HERMES_PROGRESS_DELAY_SECONDS and re-sent on each throttled "edit" (the indicator lapses
 * after a few seconds); nothing to remove, it ends with the bot's reply. `typing` resolves the
 * sender; it returns undefined where no indicator is shown (then `post` returns no id, so no edits).
 */
export function typingProgress(typing: (ref: ProgressRef, signal: AbortSignal) => Promise<boolean>): ProgressChannel {
  return {
    post: async (ref, _text, signal) => ((await typing(ref, signal)) ? TYPING_PROGRESS_ID : undefined),
    edit: async (ref, _id, _text, signal) => { await typing(ref, signal); },
    remove: () => Promise.resolve(),
  };
}

/** The agent's settings for `type` and its namespace, or NotConfigured. */
async function settingsFor(deps: PlatformDeliveryDeps, ob: Pick<Obligation, 'agentId'>, type: string): Promise<{ settings: PlatformSettings; namespace: string }> {
  const agent = await deps.agents.getById(ob.agentId);
  const settings = agent ? platformOf(agent.compiled, type) : undefined;
  if (!agent || !settings) throw new NotConfigured(`agent ${ob.agentId} has no ${type} platform any more`);
  return { settings, namespace: agent.compiled.agent.namespace };
}

async function secretOf(deps: PlatformDeliveryDeps, namespace: string, settings: PlatformSettings, key: string, required: boolean): Promise<string | undefined> {
  const ref = { name: settings.credentialsSecret, key };
  const value = await deps.secrets.resolve(namespace, ref);
  if (!value && required) throw new NotConfigured(`Secret "${ref.name}" key "${ref.key}" in namespace ${namespace} was not found (read from ${deps.secrets.source})`);
  return value || undefined;
}

/** Sends a reply through a sender; `typing` progress when `shows` lets the target have it. */
function typingAdapter<S extends { send: PlatformSender['send']; typing(target: ReplyTarget, signal: AbortSignal): Promise<unknown> }>(
  senderFor: (agentId: string) => Promise<S>,
  shows: (target: unknown) => ReplyTarget | undefined = (t) => t as ReplyTarget,
): DeliveryAdapter {
  return {
    async send(ob: Obligation, text: string, signal: AbortSignal): Promise<void> {
      await (await senderFor(ob.agentId)).send(ob.target as ReplyTarget, text, signal);
    },
    progress: typingProgress(async (ref, signal) => {
      const target = shows(ref.target);
      if (!target) return false;
      await (await senderFor(ref.agentId)).typing(target, signal);
      return true;
    }),
  };
}

/**
 * Teams: the connector REST API with the app's client-credentials token (one token cache per
 * worker). The connector is the verified activity's serviceUrl unless HERMES_TEAMS_API_URL or the
 * platform's apiUrl names one (platforms/teams/send.ts).
 */
export function teamsDelivery(deps: PlatformDeliveryDeps): DeliveryAdapter {
  const tokens = new teams.TeamsTokens({ loginUrl: deps.config.HERMES_TEAMS_LOGIN_URL });
  async function senderFor(agentId: string): Promise<teams.TeamsSender> {
    const { settings, namespace } = await settingsFor(deps, { agentId }, 'teams');
    const appId = (await secretOf(deps, namespace, settings, teams.TEAMS_KEYS.appId, true))!;
    const password = (await secretOf(deps, namespace, settings, teams.TEAMS_KEYS.password, true))!;
    const tenantId = await secretOf(deps, namespace, settings, teams.TEAMS_KEYS.tenantId, false);
    const apiUrl = teams.teamsApiUrl(settings, deps.config.HERMES_TEAMS_API_URL);
    return new teams.TeamsSender({ credentials: { appId, password, ...(tenantId ? { tenantId } : {}) }, tokens, ...(apiUrl ? { apiUrl } : {}) });
  }
  // Progress: a `typing` activity in the conversation the reply goes to.
  return typingAdapter(senderFor);
}

/**
 * Discord: a `/ask` reply through the interaction's webhook while its token lives (no bot token
 * needed for that), else — and for Gateway messages — a channel message as the bot.
 */
export function discordDelivery(deps: PlatformDeliveryDeps): DeliveryAdapter {
  async function senderFor(agentId: string): Promise<discord.DiscordSender> {
    const { settings, token } = await platformToken(deps, { agentId }, 'discord', discord.DISCORD_KEYS.botToken);
    return new discord.DiscordSender({ token, apiUrl: discord.discordApiUrl(settings, deps.config.HERMES_DISCORD_API_URL) });
  }
  // Progress: "typing…" in the channel as the bot; a `/ask` interaction's deferred "thinking…" already shows it.
  const adapter = typingAdapter(senderFor, (t) => {
    const target = discord.discordTargetSchema.parse(t);
    return target.interaction ? undefined : target;
  });
  // A `/ask` waits for its own reply (the deferred "thinking…"); a Gateway message is a chat.
  return { ...adapter, answersEachRequest: (t) => discord.discordTargetSchema.safeParse(t).data?.interaction !== undefined };
}

export function telegramDelivery(deps: PlatformDeliveryDeps): DeliveryAdapter {
  async function senderFor(agentId: string): Promise<telegram.TelegramSender> {
    const { settings, token } = await platformToken(deps, { agentId }, 'telegram', telegram.TELEGRAM_KEYS.botToken);
    return new telegram.TelegramSender({ token, apiUrl: telegram.telegramApiUrl(settings, deps.config.HERMES_TELEGRAM_API_URL) });
  }
  // Progress: sendChatAction `typing` in the chat (and forum topic) the reply goes to.
  return typingAdapter(senderFor);
}

/**
 * The signed webhook: replies POSTed (signed with WEBHOOK_SECRET) to the platform's callbackUrl;
 * without one they are only stored (read with the signed GET), and the obligation is settled as delivered.
 */
export function webhookDelivery(deps: PlatformDeliveryDeps): DeliveryAdapter {
  return {
    async send(ob: Obligation, text: string, signal: AbortSignal): Promise<void> {
      const { settings, namespace } = await settingsFor(deps, ob, 'webhook');
      if (!settings.callbackUrl) return;
      const secret = (await secretOf(deps, namespace, settings, webhook.WEBHOOK_KEYS.secret, true))!;
      await webhook.postWebhookReply({ url: settings.callbackUrl, secret }, { obligationId: ob.id, admissionId: ob.admissionId, target: ob.target, text }, signal);
    },
    // Each request gets its own callback (or stored reply): its sender waits for that one.
    answersEachRequest: () => true,
  };
}

/** The adapters a worker delivers with, by platform name. */
export function platformAdapters(deps: PlatformDeliveryDeps): Map<string, DeliveryAdapter> {
  return new Map([['slack', slackDelivery(deps)], ['teams', teamsDelivery(deps)], ['webhook', webhookDelivery(deps)], ['telegram', telegramDelivery(deps)], ['discord', discordDelivery(deps)]]);
}
