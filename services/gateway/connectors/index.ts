// The platforms' long-lived connections (services/gateway/connectors/supervisor.ts). Each
// platform module that can connect out (Slack Socket Mode, Telegram long polling, the Discord
// Gateway) adds its Connector to `platformConnectors`.
import { discordConnector } from './discord.js';
import { slackSocketConnector } from './slack-socket.js';
import type { Connector } from './supervisor.js';
import { telegramPolling } from './telegram.js';

export * from './supervisor.js';
export { discordConnector } from './discord.js';
export { slackSocketConnector } from './slack-socket.js';

/** Every connector the gateway runs. */
export const platformConnectors: readonly Connector[] = [slackSocketConnector(), telegramPolling, discordConnector];
