// Profile `spec.sandbox` (where terminal and file tools run) and `spec.approvals` (the guard in
// front of every command). Impossible combinations are refused by CEL at `kubectl apply` and by
// the same checks in `hermes dev`.
import { z } from 'zod';
import { specLimits, withRules, type Rule } from './common.js';

/** A Kubernetes quantity (`500m`, `2Gi`, `1.5`). */
const quantity = z.string().max(64).regex(/^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$/, 'must be a Kubernetes quantity such as 500m or 2Gi');
const quantities = z.object({
  cpu: quantity.optional(),
  memory: quantity.optional(),
  'ephemeral-storage': quantity.optional(),
}).strict();

/** `30m`, `168h`, `7d`, `1h30m`: a duration in s/m/h/d units. */
export const durationPattern = /^([0-9]+(s|m|h|d))+$/;
const unitSeconds: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400 };

/** Seconds of a {@link durationPattern} duration. */
export function durationSeconds(text: string): number {
  let total = 0;
  for (const [, n, unit] of text.matchAll(/([0-9]+)(s|m|h|d)/g)) total += Number(n) * (unitSeconds[unit ?? 's'] ?? 1);
  return total;
}

/**
 * One egress destination: a CIDR (`203.0.113.0/24`, `2001:db8::/32`), an address or CIDR with a
 * port (`203.0.113.7:443`, `10.0.0.0/8:5432`, `[2001:db8::1]:443`), or a host name with a port
 * (`api.github.com:443`); a port may be a range (`8000-8100`) and name its protocol (`/udp`).
 * The shape only (RE2 syntax, for the CRD too); compile parses each entry exactly
 * (services/sandbox parseAllowEntry) and refuses what it cannot open.
 */
export const egressEntryPattern = new RegExp(String.raw`^(?:(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?:/[0-9]{1,2})?(?::[0-9]{1,5}(?:-[0-9]{1,5})?(?:/(?:[tT][cC][pP]|[uU][dD][pP]))?)?|\[[0-9a-fA-F:.]+(?:/[0-9]{1,3})?\](?::[0-9]{1,5}(?:-[0-9]{1,5})?(?:/(?:[tT][cC][pP]|[uU][dD][pP]))?)|[0-9a-fA-F:]*:[0-9a-fA-F:.]*(?:/[0-9]{1,3})?|[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*(?::[0-9]{1,5}(?:-[0-9]{1,5})?(?:/(?:[tT][cC][pP]|[uU][dD][pP]))?))$`);

type SandboxSpec = Partial<z.infer<typeof sandboxSpecShape>>;

const sandboxRules: Rule<SandboxSpec>[] = [
  {
    rule: '!has(self.mode) || self.mode != "session" || !has(self.backend) || self.backend == "kubernetes"',
    message: 'mode session keeps a sandbox per session in the cluster (agent-sandbox); the bubblewrap backend runs one process per call: use mode call, or backend kubernetes',
    check: (s) => s.mode !== 'session' || s.backend === undefined || s.backend === 'kubernetes',
  },
  {
    rule: '!has(self.warmPool) || (has(self.mode) && self.mode == "session")',
    message: 'warmPool only applies to mode session (per-call sandboxes are never reused)',
    check: (s) => s.warmPool === undefined || s.mode === 'session',
  },
  {
    rule: '!has(self.idleTimeoutSeconds) || (has(self.mode) && self.mode == "session")',
    message: 'idleTimeoutSeconds only applies to mode session (a per-call sandbox ends with its call)',
    check: (s) => s.idleTimeoutSeconds === undefined || s.mode === 'session',
  },
  {
    rule: '!has(self.backend) || self.backend != "bubblewrap" || (!has(self.image) && !has(self.runtimeClassName) && !has(self.namespace) && !has(self.resources))',
    message: 'image, runtimeClassName, namespace and resources are Pod settings: the bubblewrap backend runs host programs in a namespaced process; remove them or use backend kubernetes',
    check: (s) => s.backend !== 'bubblewrap' || (s.image === undefined && s.runtimeClassName === undefined && s.namespace === undefined && s.resources === undefined),
  },
];

const networkSchema = withRules(z.object({
  egress: z.enum(['none', 'allowlist']).default('none').describe('none: no network at all; allowlist: only the destinations in allow (never private, link-local or metadata ranges unless listed explicitly).'),
  allow: z.array(z.string().max(260).regex(egressEntryPattern, 'must be a CIDR, an address or CIDR with :port, or host:port')).max(64).default([])
    .describe('Destinations sandboxes may reach with egress allowlist: 203.0.113.0/24, 203.0.113.7:443, 10.0.0.0/8:5432, api.github.com:443.'),
}), [{
  rule: 'self.egress == "allowlist" ? size(self.allow) > 0 : size(self.allow) == 0',
  message: 'egress allowlist needs at least one allow entry, and allow entries need egress allowlist',
  check: (n) => (n.egress === 'allowlist' ? n.allow.length > 0 : n.allow.length === 0),
}]);

const sandboxSpecShape = z.object({
  backend: z.enum(['kubernetes', 'bubblewrap']).optional().describe('Where commands run: a Pod per call (kubernetes), or a namespaced process (bubblewrap). Default: the install\'s (hermes dev: bubblewrap; a cluster install: kubernetes).'),
  mode: z.enum(['call', 'session']).default('call').describe('call: a fresh sandbox per command; session: one sandbox per active session from a warm pool (kubernetes-sigs/agent-sandbox).'),
  image: z.string().min(1).max(specLimits.line).optional().describe('Container image of sandbox Pods (default: the install\'s sandbox image).'),
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/).max(63).optional().describe('Namespace of sandbox Pods and workspace volumes (default: the Agent\'s).'),
  resources: z.object({ requests: quantities.optional(), limits: quantities.optional() }).strict().optional().describe('Requests and limits of sandbox Pods (default: the install\'s).'),
  timeoutSeconds: z.number().int().min(1).max(600).default(180).describe('Foreground limit of one command in seconds (default 180, at most 600; longer work runs as a background process).'),
  runtimeClassName: z.string().min(1).max(specLimits.objectName).optional().describe('RuntimeClass of sandbox Pods, e.g. gvisor or kata.'),
  workspace: z.object({
    size: quantity.default('5Gi').describe('Size of the session\'s workspace volume (kubernetes).'),
    ttl: z.string().max(64).regex(durationPattern, 'must be a duration such as 30m, 168h or 7d').default('168h').describe('Disuse after which a session\'s workspace is deleted (default 168h).'),
  }).default({ size: '5Gi', ttl: '168h' }).describe('The session\'s workspace, mounted at /workspace in every sandbox of the session.'),
  network: networkSchema.default({ egress: 'none', allow: [] }),
  warmPool: z.object({ size: z.number().int().min(0).max(100).describe('Warm sandboxes kept ready.') }).optional().describe('Warm pool of mode session.'),
  idleTimeoutSeconds: z.number().int().min(60).max(86_400).optional().describe('Mode session: a session\'s sandbox idles out after this (default 1800); the next command gets a new one on the same workspace.'),
});

export const sandboxSpecSchema = withRules(sandboxSpecShape, sandboxRules);
export type SandboxSpecInput = z.infer<typeof sandboxSpecSchema>;

export const approvalsSpecSchema = z.object({
  mode: z.enum(['smart', 'manual', 'off']).default('manual').describe('What decides a command that is not blocked, denied or allowed by a rule and looks dangerous: the auxiliary model (smart), the user with /approve or /deny (manual), or nobody (off).'),
  deny: z.array(z.string().min(1).max(512)).max(256).default([]).describe('Glob patterns (case-insensitive) of commands that are always refused.'),
  allow: z.array(z.string().min(1).max(512)).max(256).default([]).describe('Glob patterns of commands that run without asking (the hardline blocklist and deny still win).'),
  timeoutSeconds: z.number().int().min(1).max(3_600).default(60).describe('How long a command waits for /approve; then it is refused ("Silence is not consent").'),
});
export type ApprovalsSpecInput = z.infer<typeof approvalsSpecSchema>;
