// The compiled configuration of one agent: what the operator (or `hermes dev`) writes to
// Postgres and what gateways and workers read. Secret *references* only, never values; API keys
// only as SHA-256 hashes.
import { z } from 'zod';
import { compiledAccessSchema } from './permissions.js';

export const secretRefSchema = z.object({
  /**
   * A Secret in the Agent's namespace — or '' for an `env:` source, which resolves only to a
   * variable the install allow-listed (HERMES_SECRETS_ENV_ALLOW). Never any other variable.
   */
  name: z.string(),
  /** The key in that Secret (or the variable's name). */
  key: z.string(),
});
export type SecretRef = z.infer<typeof secretRefSchema>;

/** One model endpoint (the primary unless it is `moa`, a fallback, a Mixture-of-Agents member). */
export const compiledEndpointSchema = z.object({
  provider: z.enum(['openai', 'anthropic', 'openai-compatible']),
  model: z.string().min(1),
  baseURL: z.string().url().optional(),
  apiKeyRef: secretRefSchema.optional(),
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  /** More keys for the same endpoint: the credential pool rotates through them (agent loop). */
  extraApiKeyRefs: z.array(secretRefSchema).optional(),
  /** USD per million tokens; overrides the built-in price table (agent loop). */
  pricing: z.object({
    inputPerMTok: z.number().min(0),
    outputPerMTok: z.number().min(0),
    cacheReadPerMTok: z.number().min(0).optional(),
    cacheWritePerMTok: z.number().min(0).optional(),
  }).optional(),
});
export type CompiledEndpoint = z.infer<typeof compiledEndpointSchema>;

/** The primary model: an endpoint, or `provider: moa` naming a preset of `moa.presets`. */
export const compiledModelSchema = compiledEndpointSchema.extend({ provider: z.enum(['openai', 'anthropic', 'openai-compatible', 'moa']) });
export type CompiledModel = z.infer<typeof compiledModelSchema>;

/** The most reference models one Mixture-of-Agents preset may ask (Hermes' cap on the fan-out). */
export const MOA_MAX_REFERENCES = 8;

/** A Mixture-of-Agents preset (Profile spec.moa.presets[]). */
export const compiledMoaPresetSchema = z.object({
  name: z.string().min(1),
  referenceModels: z.array(compiledEndpointSchema).min(1).max(MOA_MAX_REFERENCES),
  aggregator: compiledEndpointSchema,
  referenceTemperature: z.number().min(0).max(2),
  aggregatorTemperature: z.number().min(0).max(2),
  maxTokens: z.number().int().positive(),
  fanout: z.enum(['user_turn', 'per_iteration']),
});
export type CompiledMoaPreset = z.infer<typeof compiledMoaPresetSchema>;

/** A Kubernetes quantity map (`cpu: 500m`, `memory: 1Gi`, `ephemeral-storage: 2Gi`). */
const quantitiesSchema = z.record(z.string(), z.string());

/**
 * Where terminal and file tools run (Profile `spec.sandbox`). `backend` absent: the install's
 * default (`hermes dev`: bubblewrap; a cluster install: kubernetes). `mode: call` runs one sandbox
 * per call; `session` keeps one per active session, claimed from a warm pool (agent-sandbox).
 */
export const compiledSandboxSchema = z.object({
  backend: z.enum(['kubernetes', 'bubblewrap']).optional(),
  mode: z.enum(['call', 'session']),
  image: z.string().min(1).optional(),
  /** Namespace of the sandbox Pods and workspace PVCs; absent = the Agent's namespace. */
  namespace: z.string().min(1).optional(),
  resources: z.object({ requests: quantitiesSchema.optional(), limits: quantitiesSchema.optional() }).optional(),
  /** Foreground limit of one command (SPEC: 180 s, at most 600 s). */
  timeoutSeconds: z.number().int().min(1).max(600),
  runtimeClassName: z.string().min(1).optional(),
  workspace: z.object({ size: z.string().min(1), ttlSeconds: z.number().int().positive() }),
  network: z.object({ egress: z.enum(['none', 'allowlist']), allow: z.array(z.string()) }),
  /** Warm sandboxes kept ready per Profile (mode session). */
  warmPool: z.object({ size: z.number().int().min(0) }).optional(),
  /** A session's sandbox idles out after this (mode session; default 30 min). */
  idleTimeoutSeconds: z.number().int().positive().optional(),
});
export type CompiledSandbox = z.infer<typeof compiledSandboxSchema>;

/**
 * The guard in front of every command (Profile `spec.approvals`): hardline blocklist (always),
 * `deny` globs, `allow` globs, dangerous-command detection, then `mode`; a pending approval
 * times out after `timeoutSeconds` as a denial ("Silence is not consent").
 */
export const compiledApprovalsSchema = z.object({
  mode: z.enum(['smart', 'manual', 'off']),
  deny: z.array(z.string()),
  allow: z.array(z.string()),
  timeoutSeconds: z.number().int().positive(),
});
export type CompiledApprovals = z.infer<typeof compiledApprovalsSchema>;

export const compiledAgentSchema = z.object({
  apiVersion: z.literal('hermes.dev/v1alpha1'),
  agent: z.object({ namespace: z.string(), name: z.string(), generation: z.number().int().optional() }),
  profile: z.object({ namespace: z.string(), name: z.string() }),
  model: compiledModelSchema,
  persona: z.string(),
  api: z.object({
    enabled: z.boolean(),
    /** SHA-256 (hex) of each accepted bearer key. */
    keySha256: z.array(z.string().regex(/^[0-9a-f]{64}$/)),
    /**
     * Whom each key speaks for (Agent spec.api.keys[].user / trustedBackend). A key of keySha256
     * without an entry here is bound to an implicit user of its own (it names no user, and reads
     * only its own admissions): the safest default.
     */
    keys: z.array(z.object({
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      user: z.string().min(1).optional(),
      trustedBackend: z.boolean().optional(),
    })).optional(),
  }),
  busyPolicy: z.enum(['queue', 'steer', 'interrupt']),
  /** Emergency stop (Agent spec.stopped): no new turns, running ones stopped. See also `hermes agents stop` (agents.stopped_at). */
  stopped: z.boolean().optional(),
  /** Sessions of this agent running a turn at once; the rest wait queued. Absent = no limit. */
  maxConcurrentSessions: z.number().int().positive().optional(),
  /** Tried in order when `model` fails (operator issue: Profile.spec.fallbackModels). */
  fallbackModels: z.array(compiledEndpointSchema).optional(),
  /** Mixture-of-Agents presets (Profile spec.moa): the model when its provider is `moa`, and `/moa`. */
  moa: z.object({ defaultPreset: z.string().min(1), presets: z.array(compiledMoaPresetSchema).min(1) }).optional(),
  /** Chat platforms: credentials as a Secret name (keys per platform), never values. */
  platforms: z.array(z.object({
    type: z.string(),
    credentialsSecret: z.string(),
    allowlist: z.array(z.string()),
    allowAll: z.boolean(),
    dmPairing: z.boolean(),
    groupPolicy: z.enum(['mention', 'all', 'off']),
    /** The platform's API base URL for this agent (absent: the install's, e.g. HERMES_SLACK_API_URL, HERMES_TELEGRAM_API_URL). */
    apiUrl: z.string().url().optional(),
    /** Toolsets offered in turns from this platform (each also enabled for the agent); absent: the platform's default (all, or the restricted webhook set). */
    toolsets: z.array(z.string()).optional(),
    /** Signed webhook: where replies are POSTed (signed with the platform's secret); absent: replies are only stored. */
    callbackUrl: z.string().url().optional(),
    /** Telegram: webhook (absent: the default) or long polling by one leader-elected gateway replica. */
    mode: z.enum(['webhook', 'polling']).optional(),
  })).optional(),
  admins: z.array(z.string()).optional(),
  /** Team mode: per-user and per-group permissions (Agent spec.access); absent = everyone may do everything. */
  access: compiledAccessSchema.optional(),
  /**
   * Skills this agent offers (operator: Agent.spec.skills selector): Hermes name and Skill object
   * name. The content is the current version in `skills`/`skill_versions` (namespace, object);
   * a Skill without a row there (invalid, unsafe) is not offered.
   */
  skills: z.array(z.object({ name: z.string(), object: z.string() })).optional(),
  /** Enabled toolsets (agent loop); the agent applies its default when absent. */
  toolsets: z.array(z.string()).optional(),
  /** Model calls per turn (agent loop); absent = unlimited. */
  maxIterations: z.number().int().positive().optional(),
  /** Delegation (delegate_task): children running at once per conversation (≤ 10) and each child's model calls; absent = 10 and 50. */
  delegation: z.object({ maxConcurrentChildren: z.number().int().min(1).max(10).optional(), maxIterations: z.number().int().positive().optional() }).optional(),
  /** Spend caps in USD over every model call (answers and summaries), checked before each; absent = no cap. */
  spendCaps: z.object({
    agent: z.object({ dailyUsd: z.number().positive().optional(), monthlyUsd: z.number().positive().optional() }).optional(),
    profile: z.object({ dailyUsd: z.number().positive().optional(), monthlyUsd: z.number().positive().optional() }).optional(),
    user: z.object({ dailyUsd: z.number().positive().optional(), monthlyUsd: z.number().positive().optional() }).optional(),
    /** Models without a known price may run under the caps (their cost counts only when the provider reports it). */
    allowUnpriced: z.boolean().optional(),
  }).optional(),
  /** Project context files for the prompt's context layer (agent loop); scanned before use. */
  contextFiles: z.array(z.object({ name: z.string(), content: z.string() })).optional(),
  /** Where terminal and file tools run; absent = no sandbox (the terminal and file toolsets are unavailable). */
  sandbox: compiledSandboxSchema.optional(),
  /** The command guard; absent = the defaults (manual, 60 s, no globs). */
  approvals: compiledApprovalsSchema.optional(),
  /** The web toolset: search provider (key by reference) and page limits; absent = no search, default limits. */
  web: z.object({
    search: z.object({ provider: z.enum(['searxng', 'tavily', 'brave']), url: z.string().url().optional(), apiKeyRef: secretRefSchema.optional() }).optional(),
    maxChars: z.number().int().positive().optional(),
    summariseAboveChars: z.number().int().positive().optional(),
  }).optional(),
  /**
   * MCP servers: streamable HTTP or SSE ones the worker connects to (url, header values by
   * Secret reference), stdio ones run in the session's sandbox (command, args, env values by
   * Secret reference; only when the agent has a sandbox); tool filters, timeouts in seconds.
   * Absent = none.
   */
  mcpServers: z.array(z.object({
    name: z.string().min(1),
    transport: z.enum(['http', 'sse', 'stdio']),
    url: z.string().url().optional(),
    headerRefs: z.record(z.string(), secretRefSchema).optional(),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    envRefs: z.record(z.string(), secretRefSchema).optional(),
    include: z.array(z.string()).optional(),
    exclude: z.array(z.string()).optional(),
    timeoutSeconds: z.number().int().positive().optional(),
    connectTimeoutSeconds: z.number().int().positive().optional(),
  })).optional(),
  /** execute_code's limits (Profile spec.codeExecution); absent fields = Hermes' defaults (300 s, 50 000 bytes, 50 calls). */
  codeExecution: z.object({
    timeoutSeconds: z.number().int().positive().optional(),
    maxOutputBytes: z.number().int().positive().optional(),
    maxToolCalls: z.number().int().nonnegative().optional(),
  }).optional(),
  /** clarify: how long a question waits for the user's answer; absent = Hermes' 3600 s. */
  clarify: z.object({ timeoutSeconds: z.number().int().positive() }).optional(),
  /**
   * send_message targets (Agent spec.messaging): named home channels and allowed explicit targets,
   * each `platform:chat[:thread]` (`platform:*` allows any chat of that platform); absent = none.
   */
  messaging: z.object({
    homeChannels: z.array(z.object({ name: z.string(), target: z.string() })),
    allowedTargets: z.array(z.string()),
  }).optional(),
  /** Bounded memory sizes in characters; absent = Hermes' defaults (2200 / 1375). */
  memory: z.object({ memoryCharLimit: z.number().int().positive().optional(), userCharLimit: z.number().int().positive().optional() }).optional(),
  /**
   * The learning loop: a background review after each delivered reply (absent = off); write
   * approval for memory and skill writes (absent = on when more than one person may use the agent).
   */
  learning: z.object({ backgroundReview: z.boolean().optional(), memoryWriteApproval: z.boolean().optional(), skillWriteApproval: z.boolean().optional() }).optional(),
});
export type CompiledAgent = z.infer<typeof compiledAgentSchema>;
