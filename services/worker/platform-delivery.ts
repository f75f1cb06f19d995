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
  /** The agent's Slack sender: its current settings and bot token (by reference). */
  async function senderFor(agentId: string): Promise<slack.SlackSender> {
    const agent = await deps.agents.getById(agentId);
    const settings = agent ? platformOf(agent.compiled, 'slack') : undefined;
    if (!agent || !settings) throw new Undeliverable(`agent ${agentId} has no slack platform any more`);
    const namespace = agent.compiled.agent.namespace;
    const ref = { name: settings.credentialsSecret, key: slack.SLACK_KEYS.botToken };
    const token = await deps.secrets.resolve(namespace, ref);
    if (!token) throw new Undeliverable(`Secret "${ref.name}" key "${ref.key}" in namespace ${namespace} was not found (read from ${deps.secrets.source})`);
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

/** The adapters a worker delivers with, by platform name. */
export function platformAdapters(deps: PlatformDeliveryDeps): Map<string, DeliveryAdapter> {
  return new Map([['slack', slackDelivery(deps)]]);
}
