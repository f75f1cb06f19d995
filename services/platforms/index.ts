// The public surface of services/platforms: the adapter contract and one module per chat
// platform. Imported by the gateway (inbound) and the worker (delivery); imports only core.
import type { CompiledAgent } from '../core/index.js';
import type { PlatformSettings } from './adapter.js';

export * from './adapter.js';
export * as slack from './slack/index.js';
export * as discord from './discord/index.js';

/** The agent's settings for `type`, when it has that platform. */
export const platformOf = (agent: CompiledAgent, type: string): PlatformSettings | undefined => agent.platforms?.find((p) => p.type === type);
