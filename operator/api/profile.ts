// Profile: how an agent thinks and what it may do. This slice: the model and persona;
// the agent-loop, tools, sandbox and memory issues add their fields here.
import { z } from 'zod';
import { apiVersion, baseStatusShape, objectMetaSchema, secretValueSchema, specLimits, textSourceSchema, withoutNul, withRules, type Rule } from './common.js';
import { mcpServersSchema, stdioNeedsSandboxRule } from './mcp.js';
import { approvalsSpecSchema, sandboxSpecSchema } from './sandbox.js';
import { moaSpecSchema, moaModelRule } from './moa.js';
import { envKeyRule, fallbackModelSchema, modelSpecSchema } from './model.js';

export { endpointModelSchema, envKeyRule, fallbackModelSchema, modelSpecSchema } from './model.js';

/**
 * The web search key follows the same rule: a key from the environment only goes to the
 * provider's public API, never to a url the Profile chose. The worker enforces it too.
 */
export const webSearchEnvKeyRule: Rule<{ url?: string; apiKey?: { env?: string } }> = {
  rule: '!has(self.url) || !has(self.apiKey) || !has(self.apiKey.env)',
  message: 'an API key from env is only sent to the search provider\'s public API; with url set, put the key in a Secret and use secretKeyRef',
  check: (s) => !s.url || !s.apiKey?.env,
};

/** Most context files a Profile may list, and the size of each (characters). */
export const contextFileLimits = { files: 8, chars: 100_000 } as const;
/** Longest persona (characters), inline or from a ConfigMap. */
export const personaMaxChars = 20_000;

export const contextFileSchema = withRules(z.object({
  name: z.string().min(1).max(255).describe('File name as the project knows it: .hermes.md, HERMES.md, AGENTS.md, CLAUDE.md, .cursorrules.'),
  content: z.string().max(contextFileLimits.chars).optional().describe('The file\'s text, inline.'),
  contentFrom: textSourceSchema.optional().describe('The file\'s text from a ConfigMap key (e.g. kubectl create configmap repo-context --from-file=AGENTS.md).'),
}), [{
  rule: 'has(self.content) != has(self.contentFrom)',
  message: 'each context file needs exactly one of content or contentFrom',
  check: (f) => (f.content !== undefined) !== (f.contentFrom !== undefined),
}]);
export type ContextFile = z.infer<typeof contextFileSchema>;

const capUsd = z.number().positive().max(specLimits.spendCapUsd);
/** A spend cap's USD per UTC day and month. */
const spendCap = z.object({ dailyUsd: capUsd.optional(), monthlyUsd: capUsd.optional() });

export const profileSpecSchema = withoutNul(withRules(z.object({
  model: withRules(modelSpecSchema, [envKeyRule]),
  fallbackModels: z.array(fallbackModelSchema).max(8).default([]).describe('Tried in order when the primary model fails (rate limit, outage).'),
  persona: z.string().max(personaMaxChars).default('').describe('Identity and voice of the agent (the first prompt layer), inline. Use personaFrom to keep it in a ConfigMap.'),
  personaFrom: textSourceSchema.optional().describe('The persona from a ConfigMap key instead of inline text (at most 20 000 characters).'),
  toolsets: z.array(z.string().min(1).max(specLimits.token)).max(64).optional().describe('Enabled toolsets (default: clock; the in-process todo toolset is opt-in; kanban gives the kanban_* tools on the person\'s own board, and turns the Kanban dispatcher starts get it anyway). Only available tools of these toolsets reach the model.'),
  maxIterations: z.number().int().positive().max(specLimits.iterations).optional().describe(`Model calls per turn (default: unlimited; at most ${specLimits.iterations}).`),
  contextFiles: z.array(contextFileSchema).max(contextFileLimits.files).optional()
    .describe('Project context files (.hermes.md/HERMES.md, AGENTS.md, CLAUDE.md, .cursorrules) for the prompt\'s context layer, inline or from ConfigMaps; scanned for injection and refused with a notice.'),
  spendCaps: z.object({
    agent: spendCap.optional(),
    profile: spendCap.optional(),
    user: spendCap.optional(),
    allowUnpriced: z.boolean().optional().describe('Let models without a known price (no pricing, not in the built-in table) run under these caps; their calls count only what the provider reports (e.g. OpenRouter), else nothing. Default false: such a model is refused with a message to set pricing.'),
  }).optional().describe('Spend caps in USD per agent, per profile and per user, per UTC day and month, over every model call (answers and summaries); checked before every model call. Under a cap each model needs a price (model.pricing or the built-in table) unless allowUnpriced.'),
  sandbox: sandboxSpecSchema.optional().describe('Where the terminal and file toolsets run their commands: a Pod per call in the cluster, or a bubblewrap process in hermes dev; the session\'s workspace is at /workspace.'),
  approvals: approvalsSpecSchema.optional().describe('The guard in front of every command: hardline blocklist (always), deny globs, allow globs, dangerous-command detection, then mode.'),
  memory: z.object({
    memoryCharLimit: z.number().int().min(100).max(100_000).optional().describe('Size of the agent\'s MEMORY notes (shared by all its users), in characters (default 2200).'),
    userCharLimit: z.number().int().min(100).max(100_000).optional().describe('Size of each person\'s USER profile, in characters (default 1375).'),
    writeApproval: z.boolean().optional().describe('Memory writes (the tool\'s and the background review\'s) wait for an admin\'s /memory approve. Default: on when more than one person may use the agent, off otherwise.'),
  }).optional().describe('Bounded memory (the memory toolset): the agent\'s notes and one profile per person, in the prompt as a snapshot taken when a conversation starts.'),
  skills: z.object({
    writeApproval: z.boolean().optional().describe('Skill writes (skill_manage, the background review\'s) wait for an admin\'s /skills approve. Default: on when more than one person may use the agent, off otherwise.'),
  }).optional().describe('The agent\'s own (learned) skills.'),
  web: z.object({
    search: withRules(z.object({
      provider: z.enum(['searxng', 'tavily', 'brave']).describe('The search engine behind web_search: a self-hosted SearXNG (its JSON API), Tavily or Brave Search.'),
      url: z.string().max(specLimits.url).url().optional().describe('Base URL of the provider (required for searxng; defaults to the public API of tavily and brave). Passes the SSRF guard like every fetch: a private address is reachable only inside the install\'s HERMES_WEB_ALLOW_CIDRS.'),
      apiKey: secretValueSchema.optional().describe('The provider\'s API key (tavily, brave), read by the worker and sent only to the provider; never in the sandbox. A key from env is only sent to the provider\'s public API (no url); with url set, use secretKeyRef.'),
    }), [webSearchEnvKeyRule]).optional().describe('web_search is offered only when a provider is set.'),
    extract: z.object({
      maxChars: z.number().int().min(1_000).max(200_000).optional().describe('Characters of one page the model gets at most (default 20 000).'),
      summariseAboveChars: z.number().int().min(500).max(200_000).optional().describe('Pages longer than this are summarised by the model before the agent reads them (default 5 000, as Hermes).'),
    }).optional().describe('web_extract: pages as Markdown, PDFs as text.'),
  }).optional().describe('The web toolset (web_search, web_extract; add "web" to toolsets). Every URL passes the SSRF guard: private, loopback, link-local, metadata and unique-local addresses are refused, each redirect is checked again.'),
  mcpServers: mcpServersSchema.optional(),
  codeExecution: z.object({
    timeoutSeconds: z.number().int().min(1).max(400).optional().describe('Wall-clock limit of one script in seconds (default 300; at most 400, under the 420 s tool-step deadline).'),
    maxOutputBytes: z.number().int().min(1_000).max(1_000_000).optional().describe('Bytes of the script\'s output (stdout and stderr) returned to the model at most (default 50 000).'),
    maxToolCalls: z.number().int().min(0).max(1_000).optional().describe('Tool calls one script may make (default 50); later calls are refused.'),
  }).optional().describe('execute_code (toolset code_execution, needs the sandbox): a Python script in the session\'s sandbox calling web_search, web_extract, read_file, write_file, search_files, patch and terminal through hermes_tools; environment variables that look like secrets never reach it.'),
  delegation: z.object({
    maxConcurrentChildren: z.number().int().min(1).max(10).optional().describe('Subagents running at once in one conversation (default and maximum 10); a spawn past it is refused.'),
    maxIterations: z.number().int().min(1).max(1_000).optional().describe('Model calls of each subagent: its own fresh budget (default 50, as Hermes).'),
  }).optional().describe('The delegation toolset (delegate_task; add "delegation" to toolsets): subagents run as their own queued turns on any worker, depth 1 (a subagent cannot delegate), without the delegation, clarify, memory, messaging and cron tools; their results come back as a new turn and their usage counts toward this conversation and the spend caps.'),
  clarify: z.object({
    timeoutSeconds: z.number().int().min(10).max(86_400).default(3_600).describe('How long a clarify question waits for the user\'s answer before the agent carries on without it (default 3600 s, as Hermes\' clarify_timeout).'),
  }).optional().describe('The clarify tool (add "clarify" to toolsets): the agent asks the user a question, with optional choices, and waits durably for the next message. Never offered in unattended turns (cron).'),
  learning: z.object({
    backgroundReview: z.boolean().default(false).describe('After a reply is delivered, a background turn (at most 16 model calls; memory, skill_manage and read-only search tools) may save memory and skills learned from the conversation. Never for cron runs; usage recorded as task background_review and counted against the spend caps.'),
  }).optional().describe('The learning loop.'),
  moa: moaSpecSchema.optional().describe('Mixture of Agents: presets of reference models answering in parallel and an aggregator writing the answer; used as the model (provider moa, model: the preset) or per prompt with /moa.'),
}), [moaModelRule, stdioNeedsSandboxRule, {
  rule: '!has(self.personaFrom) || !has(self.persona) || size(self.persona) == 0',
  message: 'set persona or personaFrom, not both',
  check: (s) => !(s.personaFrom && s.persona),
}]));

export const profileSchema = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('Profile'),
  metadata: objectMetaSchema,
  spec: profileSpecSchema,
  status: z.object({ ...baseStatusShape }).optional(),
});
export type Profile = z.infer<typeof profileSchema>;
