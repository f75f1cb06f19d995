// Agent: one deployed agent — its Profile, the OpenAI-compatible API access, chat platforms
// (credentials, allowlist, DM pairing), admins, the busy policy and where it runs.
import { z } from 'zod';
import { apiVersion, baseStatusShape, boundedRecord, envVarName, localObjectRefSchema, objectMetaSchema, secretKeySelectorSchema, specLimits, withoutNul, withRules } from './common.js';

export const platformTypes = ['slack', 'telegram', 'discord', 'matrix', 'mattermost', 'whatsapp', 'signal', 'email', 'teams', 'webhook'] as const;

export const platformSchema = withRules(z.object({
  type: z.enum(platformTypes).describe('Chat platform this agent connects to.'),
  credentials: z.object({
    secretRef: localObjectRefSchema.describe('Secret holding the platform tokens (keys per platform, e.g. SLACK_BOT_TOKEN and SLACK_APP_TOKEN).'),
    keys: z.array(z.string().min(1).max(specLimits.dataKey)).max(32).default([]).describe('Keys that must exist in the Secret; the agent is not Ready until they do.'),
  }).describe('Where the platform credentials live.'),
  allowlist: z.array(z.string().min(1).max(specLimits.principal)).max(1000).default([]).describe('Platform user ids allowed to talk to the agent.'),
  allowAll: z.boolean().default(false).describe('Let everyone on the platform talk to the agent (no allowlist). Off by default.'),
  dmPairing: z.boolean().default(true).describe('Unknown users may request access in a DM; an admin approves with a pairing code.'),
  groupPolicy: z.enum(['mention', 'all', 'off']).default('mention').describe('In group channels: answer when mentioned, to every message, or never.'),
  apiUrl: z.string().max(specLimits.url).url().optional().describe('Base URL of the platform\'s API for this agent (e.g. an egress proxy); unset: the install\'s (HERMES_SLACK_API_URL, HERMES_TELEGRAM_API_URL, HERMES_DISCORD_API_URL, HERMES_TEAMS_API_URL — see the README). The bot token from credentials is sent there.'),
  toolsets: z.array(z.string().min(1).max(specLimits.token)).max(64).optional().describe('Toolsets offered in turns that come from this platform (only those the Profile enables). Unset: all of the Profile\'s, except on the webhook platform, whose default is the restricted set for untrusted input (clock, web, vision, clarify).'),
  callbackUrl: z.string().max(specLimits.url).url().optional().describe('webhook only: replies are POSTed here, signed with WEBHOOK_SECRET like inbound requests. Unset: replies are only stored (read them with a signed GET on the hook URL).'),
  mode: z.enum(['webhook', 'polling']).optional().describe('Telegram: how updates arrive. webhook (default): Telegram POSTs them to the gateway\'s hook URL (status.hooks), checked against TELEGRAM_WEBHOOK_SECRET; polling: one gateway replica long-polls getUpdates (no public URL needed; the bot\'s webhook is deleted).'),
}), [{
  rule: '!(self.allowAll && size(self.allowlist) > 0)',
  message: 'allowAll and allowlist are exclusive: drop the allowlist or set allowAll to false',
  check: (p) => !(p.allowAll && p.allowlist.length > 0),
}, {
  rule: '!has(self.callbackUrl) || self.type == \'webhook\'',
  message: 'callbackUrl is only for the webhook platform',
  check: (p) => p.callbackUrl === undefined || p.type === 'webhook',
}, {
  rule: '!has(self.mode) || self.type == \'telegram\'',
  message: 'mode (webhook | polling) applies to telegram platforms only',
  check: (p) => p.mode === undefined || p.type === 'telegram',
}]);
export type Platform = z.infer<typeof platformSchema>;

// eslint-disable-next-line no-control-regex -- NUL is what these patterns refuse (Postgres stores none)
const platformPrincipal = z.string().max(specLimits.principal).regex(/^[a-z][a-z0-9-]*:[^\x00]+$/, 'write it as PLATFORM:ID, e.g. slack:U012ALICE');

const grantShape = {
  toolsets: z.array(z.string().min(1).max(specLimits.token)).max(256).optional().describe('Toolsets the model is offered in these people\'s turns (names from the Profile\'s toolsets; "*" = all).'),
  commands: z.array(z.string().min(1).max(specLimits.token)).max(256).optional().describe('Slash commands they may use, without the slash (e.g. new, stop, usage; "*" = all). /approve and /deny follow approve instead.'),
  approve: z.boolean().optional().describe('May answer /approve and /deny for commands waiting for a human.'),
  admin: z.boolean().optional().describe('May do everything, including the admin commands (like spec.admins).'),
};

export const accessSchema = z.object({
  default: z.object(grantShape).default({}).describe('What everyone the platform lets in may do. A field left out means no limit there (all toolsets, all commands, approve: true).'),
  groups: z.array(z.object({
    name: z.string().min(1).max(63).describe('A name for the group (shown in /whoami and logs).'),
    members: z.array(platformPrincipal).max(1000).default([]).describe('People in the group, as PLATFORM:USER_ID (slack:U012ALICE, telegram:123456, api:alice).'),
    chats: z.array(platformPrincipal).max(100).default([]).describe('Chats whose every writer gets the grant while writing there, as PLATFORM:CHAT_ID (slack:C0INCIDENTS).'),
    ...grantShape,
  })).max(64).default([]).describe('Named groups of people and chats, each with a grant added to the default.'),
  users: z.array(z.object({
    match: platformPrincipal.describe('The person, as PLATFORM:USER_ID.'),
    ...grantShape,
  })).max(1000).default([]).describe('Grants for single people, added to the default and their groups.'),
}).describe('Team mode: per-user and per-group permissions. Grants add up (default ∪ groups ∪ users); admins may do everything. Absent: everyone the platform lets in may do everything.');

/**
 * One bearer key of the message API and the OpenAI-compatible endpoint: where its value comes
 * from, and whom it speaks for. Bound to `user` (or, with neither field, to an implicit user of its
 * own): it reads and writes only that user's sessions and admissions. `trustedBackend`: a backend
 * serving many people, which may name the user of each request.
 */
export const apiKeySchema = withRules(z.object({
  secretKeyRef: secretKeySelectorSchema.optional().describe('A key of a Secret in the Agent\'s namespace (the usual source in a cluster).'),
  env: z.string().max(specLimits.envName).regex(envVarName).optional().describe('An environment variable of the Hermes processes, only if the install allow-lists it (HERMES_SECRETS_ENV_ALLOW; in `hermes dev` HERMES_DEV_API_KEY).'),
  user: z.string().min(1).max(256).optional().describe('The one user this key speaks for (its requests may name no other user: 403); reads only that user\'s admissions. Refer to them as api:<user> in spec.admins and spec.access.'),
  trustedBackend: z.boolean().optional().describe('A trusted backend: each request may name its user (body user.id / OpenAI user), and the key reads the admissions of every API user of this agent. Default false.'),
}), [{
  rule: 'has(self.secretKeyRef) != has(self.env)',
  message: 'set exactly one source of the secret value: secretKeyRef or env',
  check: (v) => (v.secretKeyRef !== undefined) !== (v.env !== undefined),
}, {
  rule: '!(has(self.user) && has(self.trustedBackend) && self.trustedBackend)',
  message: 'a key is either bound to one user or a trusted backend: drop user or trustedBackend',
  check: (v) => !(v.user !== undefined && v.trustedBackend === true),
}]);

/** An explicit send_message target: platform:chat[:thread] (`platform:*` in allowedTargets: any chat of that platform). */
// eslint-disable-next-line no-control-regex -- as above
const messagingTarget = z.string().max(300).regex(/^[a-z][a-z0-9-]*:[^:\s\x00]+(:[^:\s\x00]+)?$/, 'write it as PLATFORM:CHAT_ID or PLATFORM:CHAT_ID:THREAD_ID, e.g. slack:C012AB3CD or telegram:-1001234567890:17');

export const messagingSchema = z.object({
  homeChannels: z.array(z.object({
    name: z.string().max(63).regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'a home channel name is lower-case letters, digits, - and _ (e.g. ops)').describe('The name the agent uses as send_message target (e.g. ops).'),
    target: messagingTarget.describe('Where it is: PLATFORM:CHAT_ID[:THREAD_ID] on one of this Agent\'s platforms (slack, telegram, discord).'),
  })).max(32).default([]).describe('Named home channels: send_message may always send to these (also by bare platform name, e.g. "slack" = the first slack home channel).'),
  allowedTargets: z.array(messagingTarget).max(256).default([]).describe('Other targets send_message may send to, as PLATFORM:CHAT_ID[:THREAD_ID]; PLATFORM:CHAT_ID allows every thread of that chat on Slack and Telegram (a Discord thread is a channel of its own: list it as discord:CHANNEL:THREAD), PLATFORM:* every chat of that platform. Anything else is refused.'),
}).describe('Home channel names are unique (checked at compile: a CEL rule over pairs costs too much for the apiserver).');

export const agentSpecSchema = withoutNul(z.object({
  profileRef: localObjectRefSchema.describe('The Profile (same namespace) this agent runs with.'),
  api: z.object({
    enabled: z.boolean().default(true).describe('Serve the message API and the OpenAI-compatible endpoint.'),
    keys: z.array(apiKeySchema).max(256).default([]).describe('Bearer keys accepted for this agent, each bound to one user (user:, or implicitly to itself when neither user nor trustedBackend is set) or a trusted backend that may name users.'),
  }).default({ enabled: true, keys: [] }).describe('The Hermes message API and the OpenAI-compatible endpoint.'),
  platforms: z.array(platformSchema).max(16).default([]).describe('Chat platforms (Slack, Telegram, …) the agent answers on.'),
  admins: z.array(z.string().min(1).max(specLimits.principal)).max(1000).default([]).describe('Platform user ids (type:id, e.g. slack:U123) who may approve pairings and run admin commands.'),
  access: accessSchema.optional(),
  skills: z.object({
    matchLabels: boundedRecord(z.string().max(317), z.string().max(63)).optional().describe('Offer only Skills (same namespace) with these labels; unset: every published Skill in the namespace.'),
    enabled: z.boolean().default(true).describe('Offer Skills at all.'),
  }).default({ enabled: true }).describe('Which Skills (procedural memory) the agent is offered.'),
  messaging: messagingSchema.optional().describe('send_message (add "messaging" to the Profile\'s toolsets): the named home channels and the other targets this agent may send to, on its own platforms with their credentials. Absent: send_message sends nowhere.'),
  busyPolicy: z.enum(['queue', 'steer', 'interrupt']).default('interrupt').describe('What a plain message does while a turn of its session runs: queue (runs next), steer (delivered to the running turn after its current tool batch), interrupt (stops the running turn, then runs). Hermes default: interrupt.'),
  stopped: z.boolean().optional().describe('Emergency stop (default false): new messages get a short refusal (no model call) and running turns are stopped. `hermes agents stop NAME` does the same without editing the Agent.'),
  maxConcurrentSessions: z.number().int().min(1).max(100_000).optional().describe('At most this many sessions of the agent run a turn at once; the others wait, queued (never dropped). Unset: no limit.'),
  runtime: z.object({
    mode: z.enum(['shared', 'dedicated']).default('shared').describe('shared: the release\'s gateway and worker pools; dedicated: Deployments owned by this Agent.'),
  }).default({ mode: 'shared' }).describe('Where the agent runs.'),
}));

export const agentStatusSchema = z.object({
  ...baseStatusShape,
  profile: z.string().optional().describe('The resolved Profile name.'),
  platforms: z.string().optional().describe('Configured platform types, comma-separated.'),
  revision: z.string().optional().describe('Hash of the compiled revision in Postgres.'),
  url: z.string().optional().describe('Message API URL of this agent on the gateway.'),
  hooks: z.array(z.string()).optional().describe('Inbound webhook URLs of the agent\'s chat platforms on the gateway (paste them into the platform\'s app settings), e.g. <gateway>/hooks/slack/<namespace>/<name> (telegram: webhook mode only).'),
  openaiModel: z.string().optional().describe('Model name to use with the OpenAI-compatible endpoint.'),
});

export const agentSchema = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('Agent'),
  metadata: objectMetaSchema,
  spec: agentSpecSchema,
  status: agentStatusSchema.optional(),
});
export type Agent = z.infer<typeof agentSchema>;
