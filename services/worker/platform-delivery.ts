// Delivery adapters of the chat platforms: each resolves the agent's platform settings from its
// current revision and the bot token by reference (ADR 0001: the Secret named by the platform's
// credentials, in the Agent's namespace), then sends through the platform module.
import type { AgentCache, Config, Obligation } from '../core/index.js';
import { platformOf, slack, telegram, type PlatformSettings } from '../platforms/index.js';
import type { SecretResolver } from '../agent/index.js';
import type { DeliveryAdapter } from './delivery.js';

export interface PlatformDeliveryDeps {
  config: Config;
  agents: AgentCache;
  secrets: SecretResolver;
}

/** The reply cannot be sent as configured (no slack platform, no bot token): a failed attempt, retried like any other. */
export class Undeliverable extends Error {
  override name = 'Undeliverable';
}

/** The agent's current settings for `platform` and the bot token under `tokenKey` of its Secret. */
async function platformToken(deps: PlatformDeliveryDeps, ob: Obligation, platform: string, tokenKey: string): Promise<{ settings: PlatformSettings; token: string }> {
  const agent = await deps.agents.getById(ob.agentId);
  const settings = agent ? platformOf(agent.compiled, platform) : undefined;
  if (!agent || !settings) throw new Undeliverable(`agent ${ob.agentId} has no ${platform} platform any more`);
  const namespace = agent.compiled.agent.namespace;
  const ref = { name: settings.credentialsSecret, key: tokenKey };
  const token = await deps.secrets.resolve(namespace, ref);
  if (!token) throw new Undeliverable(`Secret "${ref.name}" key "${ref.key}" in namespace ${namespace} was not found (read from ${deps.secrets.source})`);
  return { settings, token };
}

export function slackDelivery(deps: PlatformDeliveryDeps): DeliveryAdapter {
  return {
    async send(ob: Obligation, text: string, signal: AbortSignal): Promise<void> {
      const { settings, token } = await platformToken(deps, ob, 'slack', slack.SLACK_KEYS.botToken);
      const sender = new slack.SlackSender({ token, apiUrl: slack.slackApiUrl(settings, deps.config.HERMES_SLACK_API_URL) });
      await sender.send(ob.target as { kind: string }, text, signal);
    },
  };
}

export function telegramDelivery(deps: PlatformDeliveryDeps): DeliveryAdapter {
  return {
    async send(ob: Obligation, text: string, signal: AbortSignal): Promise<void> {
      const { settings, token } = await platformToken(deps, ob, 'telegram', telegram.TELEGRAM_KEYS.botToken);
      const sender = new telegram.TelegramSender({ token, apiUrl: telegram.telegramApiUrl(settings, deps.config.HERMES_TELEGRAM_API_URL) });
      await sender.send(ob.target as { kind: string }, text, signal);
    },
  };
}

/** The adapters a worker delivers with, by platform name. */
export function platformAdapters(deps: PlatformDeliveryDeps): Map<string, DeliveryAdapter> {
  return new Map([['slack', slackDelivery(deps)], ['telegram', telegramDelivery(deps)]]);
}
