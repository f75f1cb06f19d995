// The public surface of services/platforms: the adapter contract and one module per chat
// platform. Imported by the gateway (inbound) and the worker (delivery); imports only core.
import type { CompiledAgent } from '../core/index.js';
import type { PlatformSettings } from './adapter.js';
import { WEBHOOK_DEFAULT_TOOLSETS } from './webhook/index.js';

export * from './adapter.js';
export * from './targets.js';
export * as slack from './slack/index.js';
export * as teams from './teams/index.js';
export * as webhook from './webhook/index.js';
export * as telegram from './telegram/index.js';
export * as discord from './discord/index.js';

/** The agent's settings for `type`, when it has that platform. */
export const platformOf = (agent: CompiledAgent, type: string): PlatformSettings | undefined => agent.platforms?.find((p) => p.type === type);

/**
 * The toolsets a turn admitted from `platform` may use, or undefined for no restriction: the
 * platform entry's `toolsets` when set, else the platform's default (the signed webhook's is
 * restricted: untrusted input). The worker intersects this with the agent's enabled toolsets.
 */
export function platformToolsets(agent: CompiledAgent, platform: string): readonly string[] | undefined {
  const settings = platformOf(agent, platform);
  if (settings?.toolsets) return settings.toolsets;
  return platform === 'webhook' ? WEBHOOK_DEFAULT_TOOLSETS : undefined;
}
