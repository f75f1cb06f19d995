// Agent: one deployed agent — its Profile, the OpenAI-compatible API access, chat platforms
// (credentials, allowlist, DM pairing), admins, the busy policy and where it runs.
import { z } from 'zod';
import { apiVersion, baseStatusShape, localObjectRefSchema, objectMetaSchema, secretValueSchema, withRules } from './common.js';

export const platformTypes = ['slack', 'telegram', 'discord', 'matrix', 'mattermost', 'whatsapp', 'signal', 'email', 'teams'] as const;

export const platformSchema = withRules(z.object({
  type: z.enum(platformTypes).describe('Chat platform this agent connects to.'),
  credentials: z.object({
    secretRef: localObjectRefSchema.describe('Secret holding the platform tokens (keys per platform, e.g. SLACK_BOT_TOKEN and SLACK_APP_TOKEN).'),
    keys: z.array(z.string().min(1)).default([]).describe('Keys that must exist in the Secret; the agent is not Ready until they do.'),
  }).describe('Where the platform credentials live.'),
  allowlist: z.array(z.string().min(1)).default([]).describe('Platform user ids allowed to talk to the agent.'),
  allowAll: z.boolean().default(false).describe('Let everyone on the platform talk to the agent (no allowlist). Off by default.'),
  dmPairing: z.boolean().default(true).describe('Unknown users may request access in a DM; an admin approves with a pairing code.'),
  groupPolicy: z.enum(['mention', 'all', 'off']).default('mention').describe('In group channels: answer when mentioned, to every message, or never.'),
  apiUrl: z.string().url().optional().describe('Base URL of the platform\'s API for this agent (e.g. an egress proxy); unset: the install\'s (HERMES_SLACK_API_URL, default https://slack.com/api/). The bot token from credentials is sent there.'),
}), [{
  rule: '!(self.allowAll && size(self.allowlist) > 0)',
  message: 'allowAll and allowlist are exclusive: drop the allowlist or set allowAll to false',
  check: (p) => !(p.allowAll && p.allowlist.length > 0),
}]);
export type Platform = z.infer<typeof platformSchema>;

export const agentSpecSchema = z.object({
  profileRef: localObjectRefSchema.describe('The Profile (same namespace) this agent runs with.'),
  api: z.object({
    enabled: z.boolean().default(true).describe('Serve the message API and the OpenAI-compatible endpoint.'),
    keys: z.array(secretValueSchema).default([]).describe('Bearer keys accepted for this agent.'),
  }).default({ enabled: true, keys: [] }).describe('The Hermes message API and the OpenAI-compatible endpoint.'),
  platforms: z.array(platformSchema).max(16).default([]).describe('Chat platforms (Slack, Telegram, …) the agent answers on.'),
  admins: z.array(z.string().min(1)).default([]).describe('Platform user ids (type:id, e.g. slack:U123) who may approve pairings and run admin commands.'),
  skills: z.object({
    matchLabels: z.record(z.string(), z.string()).optional().describe('Offer only Skills (same namespace) with these labels; unset: every published Skill in the namespace.'),
    enabled: z.boolean().default(true).describe('Offer Skills at all.'),
  }).default({ enabled: true }).describe('Which Skills (procedural memory) the agent is offered.'),
  busyPolicy: z.enum(['queue', 'steer', 'interrupt']).default('interrupt').describe('What a plain message does while a turn of its session runs: queue (runs next), steer (delivered to the running turn after its current tool batch), interrupt (stops the running turn, then runs). Hermes default: interrupt.'),
  stopped: z.boolean().optional().describe('Emergency stop (default false): new messages get a short refusal (no model call) and running turns are stopped. `hermes agents stop NAME` does the same without editing the Agent.'),
  maxConcurrentSessions: z.number().int().min(1).max(100_000).optional().describe('At most this many sessions of the agent run a turn at once; the others wait, queued (never dropped). Unset: no limit.'),
  runtime: z.object({
    mode: z.enum(['shared', 'dedicated']).default('shared').describe('shared: the release\'s gateway and worker pools; dedicated: Deployments owned by this Agent.'),
  }).default({ mode: 'shared' }).describe('Where the agent runs.'),
});

export const agentStatusSchema = z.object({
  ...baseStatusShape,
  profile: z.string().optional().describe('The resolved Profile name.'),
  platforms: z.string().optional().describe('Configured platform types, comma-separated.'),
  revision: z.string().optional().describe('Hash of the compiled revision in Postgres.'),
  url: z.string().optional().describe('Message API URL of this agent on the gateway.'),
  hooks: z.array(z.string()).optional().describe('Inbound webhook URLs of the agent\'s chat platforms on the gateway (paste them into the platform\'s app settings), e.g. <gateway>/hooks/slack/<namespace>/<name>.'),
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
