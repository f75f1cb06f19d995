// Telegram: the Bot API inbound (webhook secret token, updates; long polling lives in the
// gateway's connector) and sendMessage / editMessageText outbound.
import type { PlatformSettings } from '../adapter.js';

export { TELEGRAM_SECRET_HEADER, verifyTelegramSecret } from './verify.js';
export { addressesBot, cleanText, normaliseTelegram, parseTelegramUpdate, type BotIdentity, type TelegramMessage, type TelegramUpdate } from './updates.js';
export { BotIdentities, asRateLimited, botIdOf, botLabel, grammySignal, telegramApi, type TelegramApiOptions } from './api.js';
export { TELEGRAM_MAX_MESSAGE_CHARS, TelegramSender, telegramTargetSchema, type TelegramTarget } from './send.js';

/** Secret keys read from the platform's `credentials.secretRef` (in `hermes dev`: the variables of the same names). */
export const TELEGRAM_KEYS = { botToken: 'TELEGRAM_BOT_TOKEN', webhookSecret: 'TELEGRAM_WEBHOOK_SECRET' } as const;

/** The API base URL for an agent's telegram platform: its own `apiUrl`, else the install's. */
export const telegramApiUrl = (settings: PlatformSettings, installDefault: string) => settings.apiUrl ?? installDefault;

/** Whether the agent's telegram platform long-polls (mode: polling) rather than taking webhooks. */
export const telegramPolls = (settings: PlatformSettings) => settings.mode === 'polling';
