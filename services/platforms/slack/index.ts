// Slack: the Events API inbound (v0 signatures, envelopes) and chat.postMessage / chat.update outbound.
import type { PlatformSettings } from '../adapter.js';

export { SLACK_MAX_SKEW_SECONDS, checkTimestamp, slackSignature, verifySlackRequest } from './verify.js';
export { normaliseSlack, parseSlackEnvelope, type SlackEnvelope } from './events.js';
export { SLACK_MAX_MESSAGE_CHARS, SlackSender, slackTargetSchema, type SlackTarget } from './send.js';
export { slackText } from './format.js';

/** Secret keys read from the platform's `credentials.secretRef` (in `hermes dev`: the variables of the same names). */
export const SLACK_KEYS = { botToken: 'SLACK_BOT_TOKEN', signingSecret: 'SLACK_SIGNING_SECRET', appToken: 'SLACK_APP_TOKEN' } as const;

/** The API base URL for an agent's slack platform: its own `apiUrl`, else the install's. */
export const slackApiUrl = (settings: PlatformSettings, installDefault: string) => settings.apiUrl ?? installDefault;

/** Slack keeps `/…` for its own slash commands: ours are written `!retry`, `!new`, … (events.ts). */
export const SLACK_COMMAND_PREFIX = '!';
