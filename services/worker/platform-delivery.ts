// Delivery adapters of the chat platforms: each resolves the agent's platform settings from its
// current revision and the bot token by reference (ADR 0001: the Secret named by the platform's
// credentials, in the Agent's namespace), then sends through the platform module.
import type { AgentCache, Config, Obligation } from '../core/index.js';
import { phraseCommands, platformOf, slack } from '../platforms/index.js';
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

export function slackDelivery(deps: PlatformDeliveryDeps): DeliveryAdapter {
  return {
    // The ledger splits and records each piece (a retry sends only the rest).
    maxMessageChars: slack.SLACK_MAX_MESSAGE_CHARS,
    async send(ob: Obligation, text: string, signal: AbortSignal): Promise<void> {
      const agent = await deps.agents.getById(ob.agentId);
      const settings = agent ? platformOf(agent.compiled, 'slack') : undefined;
      if (!agent || !settings) throw new Undeliverable(`agent ${ob.agentId} has no slack platform any more`);
      const namespace = agent.compiled.agent.namespace;
      const ref = { name: settings.credentialsSecret, key: slack.SLACK_KEYS.botToken };
      const token = await deps.secrets.resolve(namespace, ref);
      if (!token) throw new Undeliverable(`Secret "${ref.name}" key "${ref.key}" in namespace ${namespace} was not found (read from ${deps.secrets.source})`);
      const sender = new slack.SlackSender({ token, apiUrl: slack.slackApiUrl(settings, deps.config.HERMES_SLACK_API_URL) });
      // Notices name commands as `/retry`; on Slack they are written `!retry`.
      await sender.send(ob.target as { kind: string }, phraseCommands(text, slack.SLACK_COMMAND_PREFIX), signal);
    },
  };
}

/** The adapters a worker delivers with, by platform name. */
export function platformAdapters(deps: PlatformDeliveryDeps): Map<string, DeliveryAdapter> {
  return new Map([['slack', slackDelivery(deps)]]);
}
