// Discord: the interactions endpoint (Ed25519 signatures, PING, `/ask`), Gateway messages (DMs,
// channels under groupPolicy, threads), and replies through the REST API (interaction webhooks,
// channel messages).
import type { PlatformSettings } from '../adapter.js';
import { DISCORD_DEFAULT_API_URL } from './rest.js';

export { DISCORD_MAX_SKEW_SECONDS, checkDiscordTimestamp, isDiscordPublicKey, verifyDiscordRequest } from './verify.js';
export {
  INTERACTION_TOKEN_SECONDS, THREAD_CHANNEL_TYPES, deferredEphemeralResponse, deferredResponse, discordChat, normaliseDiscordInteraction, parseDiscordInteraction, type DiscordInteraction,
} from './interactions.js';
export { normaliseDiscordMessage, parseDiscordMessage, type DiscordMessage, type MessageContext } from './messages.js';
export { DISCORD_DEFAULT_API_URL, DiscordApiError, DiscordRest } from './rest.js';
export { DISCORD_MAX_MESSAGE_CHARS, DiscordSender, discordTargetSchema, type DiscordTarget } from './send.js';
export { DISCORD_INTENTS, DiscordGatewayFatal, runDiscordGateway, type GatewayHandlers } from './gateway.js';
export { askCommand, registerAskCommand } from './commands.js';

/** Secret keys read from the platform's `credentials.secretRef` (in `hermes dev`: the variables of the same names). */
export const DISCORD_KEYS = { botToken: 'DISCORD_BOT_TOKEN', publicKey: 'DISCORD_PUBLIC_KEY', applicationId: 'DISCORD_APPLICATION_ID' } as const;

/** The REST base URL for an agent's discord platform: its own `apiUrl`, else the install's. */
export const discordApiUrl = (settings: PlatformSettings, installDefault: string = DISCORD_DEFAULT_API_URL) => settings.apiUrl ?? installDefault;
