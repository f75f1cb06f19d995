// One validated, frozen configuration per process. Nothing else in the codebase reads
// `process.env`: every setting is declared here with its default and a one-line doc.
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

/** The longest wait a Node timer holds (2^31 - 1 ms, ≈ 24.8 days): a longer one fires after 1 ms, every time. */
export const MAX_TIMER_SECONDS = Math.floor(0x7fffffff / 1_000);
const timerBound = `at most ${MAX_TIMER_SECONDS} (≈ 24.8 days, the longest timer)`;
/** A number of seconds a timer waits, or an age compared with one. */
const timerSeconds = () => z.coerce.number().max(MAX_TIMER_SECONDS, timerBound);
const seconds = (def: number, doc: string) => timerSeconds().positive().default(def).describe(doc);

/** The provider keys the examples name, and the dev API key: what `hermes dev` allows by default. */
export const DEV_SECRET_ENV: readonly string[] = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY', 'HERMES_DEV_API_KEY', 'SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_APP_TOKEN',
  'TEAMS_APP_ID', 'TEAMS_APP_PASSWORD', 'TEAMS_TENANT_ID', 'WEBHOOK_SECRET',
  'TELEGRAM_BOT_TOKEN', 'TELEGRAM_WEBHOOK_SECRET',
  'DISCORD_BOT_TOKEN', 'DISCORD_PUBLIC_KEY', 'DISCORD_APPLICATION_ID'];

export const configSchema = z.object({
  DATABASE_URL: z.string().url().describe('Postgres connection string (the ledger and all durable state).'),
  REDIS_URL: z.string().url().describe('Redis connection string (BullMQ queues, pub/sub signals). Must use maxmemory-policy noeviction.'),
  HERMES_PORT: z.coerce.number().int().min(0).max(65535).default(8080).describe('Gateway listen port.'),
  HERMES_HOST: z.string().default('0.0.0.0').describe('Listen address of the gateway and of the worker\'s probe/metrics server.'),
  HERMES_WORKER_PORT: z.coerce.number().int().min(0).max(65535).default(8081).describe('Worker probe and metrics port: /healthz, /readyz, /metrics.'),
  HERMES_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional().describe('Serve /metrics on its own listener (HERMES_HOST:<port>) instead of the gateway\'s public port or the worker\'s probe port. Unset: /metrics is on that main port.'),
  HERMES_METRICS_TOKEN: z.string().min(16).optional().describe('When set, /metrics answers only requests with "Authorization: Bearer <token>" (401 otherwise). Unset: /metrics is open.'),
  HERMES_ADMIN_TOKEN: z.string().min(24).optional().describe('When set, the gateway serves its admin API (/v1/admin/…: the write-approval decisions) to requests with "Authorization: Bearer <token>". Unset: no admin API (404). Read it from a Secret.'),
  HERMES_MAX_WAITS_PER_KEY: z.coerce.number().int().positive().default(100).describe('Chat completions and event streams one API key may have waiting at once on one gateway process; more are refused with 429.'),
  HERMES_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('pino log level.'),
  HERMES_QUEUE_PREFIX: z.string().min(1).default('hermes').describe('BullMQ key prefix; isolates installs (and tests) sharing one Redis.'),
  HERMES_MAX_BODY_BYTES: z.coerce.number().int().positive().default(1_048_576).describe('Largest accepted HTTP request body.'),
  HERMES_MAX_MESSAGE_CHARS: z.coerce.number().int().positive().default(100_000).describe('Largest accepted message text.'),
  HERMES_MAX_QUEUED_PER_SESSION: z.coerce.number().int().positive().max(1_000).default(100).describe('Messages that may wait for their turn in one conversation; one more is answered "N messages are already waiting" and not run (it stays in the ledger). Controls of the running turn (/stop, /steer, /redirect, /approve, /deny) always get through.'),
  HERMES_DB_POOL_SIZE: z.coerce.number().int().positive().max(200).default(10).describe('Postgres connections per process. Few connections kept busy beat many that wait (fewer backends to switch between); raise it for long tool-heavy turns.'),
  HERMES_DB_QUERY_TIMEOUT_SECONDS: seconds(30, 'Client-side bound on one Postgres query: a half-open connection fails instead of hanging, and is replaced.'),
  HERMES_REDIS_TIMEOUT_SECONDS: seconds(10, 'A Redis connection that answers no PING for this long (one is sent every half of it) is dropped and reconnected: a half-open connection (a vanished node, a NAT drop) is replaced instead of hanging enqueues, workers and subscribers.'),
  HERMES_LEASE_TTL_SECONDS: seconds(300, 'Session turn lease TTL (SPEC: 300 s).'),
  HERMES_LEASE_RENEW_SECONDS: seconds(60, 'Lease renewal interval (SPEC: 60 s).'),
  HERMES_HEARTBEAT_SECONDS: seconds(10, 'Process heartbeat interval.'),
  HERMES_INSTANCE_TTL_SECONDS: seconds(60, 'A process whose heartbeat is older than this is known dead: its session leases are freed and its started turns settled. A worker that cannot heartbeat for this long stops its own turns first.'),
  HERMES_SWEEP_SECONDS: seconds(5, 'Outbox sweeper / recovery interval.'),
  HERMES_SWEEP_GRACE_SECONDS: seconds(5, 'A queued admission younger than this is left to its own enqueue.'),
  HERMES_TURN_CONCURRENCY: z.coerce.number().int().positive().default(64).describe('Turn jobs one worker process runs at once.'),
  HERMES_DELIVERY_CONCURRENCY: z.coerce.number().int().positive().default(16).describe('Delivery jobs one worker process runs at once.'),
  HERMES_REVIEW_CONCURRENCY: z.coerce.number().int().positive().default(2).describe('Background reviews (the learning loop) one worker process runs at once.'),
  HERMES_CURATOR_INTERVAL_HOURS: z.coerce.number().int().positive().max(Math.floor(MAX_TIMER_SECONDS / 3_600), `at most ${Math.floor(MAX_TIMER_SECONDS / 3_600)} (≈ 24.8 days, the longest timer)`).default(168).describe('How often each worker runs the skill curator over learned skills (stale after 14 days unused, archived after 30; SPEC: weekly), and once at start. Idempotent across workers.'),
  HERMES_CRON_TICK_SECONDS: z.coerce.number().positive().max(60).default(60).describe('CronJob scheduler: the longest wait between two ticks (at most 60 s; it also wakes at the next due slot). One scheduler is active across all workers (a Postgres advisory lock).'),
  HERMES_DELIVERY_MAX_ATTEMPTS: z.coerce.number().int().positive().default(3).describe('Delivery attempts before abandoning (SPEC: 3).'),
  HERMES_DELIVERY_MAX_AGE_SECONDS: seconds(86_400, 'Delivery obligations older than this are abandoned (SPEC: 24 h).'),
  HERMES_PROGRESS_DELAY_SECONDS: timerSeconds().min(0).default(3).describe('Chat platforms: a turn still running after this many seconds shows progress: on Slack one "working…" message (removed when the reply is delivered), on Telegram, Discord and Teams the typing indicator.'),
  HERMES_PROGRESS_EDIT_SECONDS: timerSeconds().positive().default(5).describe('Chat platforms: the "working…" message is edited (the turn\'s elapsed time and steps) at most this often; typing indicators are re-sent this often.'),
  HERMES_DELIVERY_ATTEMPT_SECONDS: seconds(60, 'Deadline of one delivery attempt: the platform send is cancelled after it, and an attempt still unrecorded past it is claimed again (marked as a possible duplicate).'),
  HERMES_TOOL_RESULT_RETENTION_SECONDS: seconds(86_400, 'Oversized tool results stored for read_tool_result are deleted after this long (Hermes keeps its spill files 24 h).'),
  HERMES_APPROVAL_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(500).describe('How often a command waiting for /approve or /deny re-reads its pending approval in Postgres (the decision, the deadline).'),
  HERMES_TURN_STALL_SECONDS: seconds(600, 'Liveness watchdog: a turn with no progress (stream chunk, model call, tool, stored message) for this long is ended (SPEC: 600 s).'),
  HERMES_TURN_WATCHDOG_POLL_SECONDS: seconds(15, 'How often the liveness watchdog checks a running turn (SPEC: 15 s).'),
  HERMES_MODEL_TIMEOUT_SECONDS: seconds(600, 'Upper bound on one model request, the whole streamed answer included (a stream that stalls ends sooner: 180 s without data, 900 s for a local server).'),
  HERMES_REPLY_WAIT_SECONDS: seconds(600, 'How long /v1/chat/completions waits for a turn before answering 504.'),
  HERMES_SHUTDOWN_GRACE_SECONDS: seconds(30, 'On SIGTERM, how long running turns may finish before being handed back.'),
  HERMES_DEV_API_KEY: z.string().min(8).optional().describe('hermes dev: the example agent API key (generated and printed when unset).'),
  HERMES_DEV_MODEL: z.string().min(1).optional().describe('hermes dev: use this model name instead of the one in the folder\'s Profiles (e.g. llama3.2 on Ollama); with --k8s the Profiles are applied to the dev cluster with it.'),
  HERMES_DEV_MANIFESTS: z.string().default('examples/minimal').describe('hermes dev: folder of Agent/Profile manifests to load.'),
  OPENAI_API_KEY: z.string().optional().describe('hermes dev: resolves Profile secret refs whose key is OPENAI_API_KEY (when allowed by HERMES_SECRETS_ENV_ALLOW).'),
  HERMES_SECRETS_SOURCE: z.enum(['kubernetes', 'files', 'local']).optional().describe('Where workers read Profile Secrets ({name, key} in the Agent\'s namespace): kubernetes (the API; default of `hermes worker` and `hermes dev --k8s`), files (HERMES_SECRETS_DIR/<namespace>/<name>/<key>) or local (Secret manifests, then allow-listed variables named by the key; default of `hermes dev`).'),
  HERMES_SECRETS_DIR: z.string().min(1).default('/var/run/hermes/secrets').describe('HERMES_SECRETS_SOURCE=files: folder laid out <namespace>/<secret name>/<key> (mounted Secrets).'),
  HERMES_SECRETS_FILE: z.string().min(1).optional().describe('HERMES_SECRETS_SOURCE=local: a YAML file of Secret manifests (kind: Secret, data/stringData) to resolve references from.'),
  HERMES_SECRETS_ENV_ALLOW: z.string().optional().transform((v, ctx) => parseEnvAllowList(v, ctx))
    .describe(`Environment variables that \`env:\` secret sources (and, with HERMES_SECRETS_SOURCE=local, secretKeyRef keys) may resolve to: comma-separated names, or "none". Default: ${DEV_SECRET_ENV.join(', ')} in \`hermes dev\`, none elsewhere. DATABASE_URL, REDIS_URL and Hermes settings can never be allowed.`),
  HERMES_SECRETS_CACHE_SECONDS: seconds(30, 'HERMES_SECRETS_SOURCE=kubernetes: how long a Secret read from the API is reused (a refused key is always re-read).'),
  HERMES_SANDBOX_BACKEND: z.enum(['kubernetes', 'bubblewrap']).default('kubernetes').describe('Where terminal and file tools run when the Profile\'s spec.sandbox names no backend: kubernetes (one Pod per call; a cluster install) or bubblewrap (one namespaced process per call; `hermes dev` defaults to it).'),
  HERMES_SANDBOX_IMAGE: z.string().min(1).default('nikolaik/python-nodejs:python3.11-nodejs20').describe('kubernetes sandbox: image of sandbox Pods when the Profile sets none (Hermes\' default terminal image; it must have /bin/sh).'),
  HERMES_SANDBOX_SERVICE_ACCOUNT: z.string().min(1).default('hermes-sandbox').describe('kubernetes sandbox: ServiceAccount of sandbox Pods (no token mounted); created in the sandbox namespace when missing.'),
  HERMES_SANDBOX_UID: z.coerce.number().int().min(1).max(2_147_483_647).default(1000).describe('kubernetes sandbox: the fixed non-root uid (and gid, fsGroup) sandbox containers run as.'),
  HERMES_SANDBOX_REQUESTS: z.string().default('cpu=100m,memory=256Mi,ephemeral-storage=256Mi').transform((v, ctx) => parseQuantities(v, ctx)).describe('kubernetes sandbox: default container requests, name=quantity pairs (a Profile\'s spec.sandbox.resources.requests overrides them key by key).'),
  HERMES_SANDBOX_LIMITS: z.string().default('cpu=1,memory=2Gi,ephemeral-storage=2Gi').transform((v, ctx) => parseQuantities(v, ctx)).describe('kubernetes sandbox: default container limits, name=quantity pairs (a Profile\'s spec.sandbox.resources.limits overrides them key by key).'),
  HERMES_SANDBOX_TMP_SIZE: z.string().min(1).default('1Gi').describe('kubernetes sandbox: size limit of the writable /tmp emptyDir (the root filesystem is read-only).'),
  HERMES_SANDBOX_START_TIMEOUT_SECONDS: seconds(60, 'kubernetes sandbox: a Pod whose container has not started this long after creation (unschedulable, slow image pull) is deleted and the call answers degraded.'),
  HERMES_SANDBOX_STORAGE_CLASS: z.string().min(1).optional().describe('kubernetes sandbox: storageClassName of workspace PVCs. Unset: the cluster\'s default StorageClass.'),
  HERMES_SANDBOX_RUNTIME_CLASS: z.string().min(1).optional().describe('kubernetes sandbox: runtimeClassName (gVisor, Kata) of sandbox Pods when the Profile sets none. Unset: the node\'s default runtime.'),
  HERMES_SANDBOX_DNS_NAMESPACE: z.string().min(1).default('kube-system').describe('kubernetes sandbox: namespace of the cluster DNS Pods, opened (port 53) by the NetworkPolicy when an egress allowlist names hosts.'),
  HERMES_SANDBOX_DNS_SELECTOR: z.string().default('k8s-app=kube-dns').transform((v, ctx) => parseQuantities(v, ctx)).describe('kubernetes sandbox: labels (name=value pairs) of the cluster DNS Pods, opened by the NetworkPolicy when an egress allowlist names hosts.'),
  HERMES_SANDBOX_POLICY_REFRESH_SECONDS: seconds(300, 'kubernetes sandbox: a worker re-resolves host:port egress entries and re-writes an Agent\'s NetworkPolicy at most this often.'),
  HERMES_WORKSPACES_DIR: z.string().min(1).default('.hermes/workspaces').describe('bubblewrap sandbox: folder holding one workspace folder per session (<namespace>/<agent>/<session>, 0700), relative to the working folder unless absolute. Its parents must be passable (x) by HERMES_BWRAP_UID.'),
  HERMES_BWRAP_UID: z.coerce.number().int().min(1).max(4_294_967_294).default(65534).describe('bubblewrap sandbox: host uid (and gid) sandboxed commands run as when the worker runs as root (a worker of another uid runs them as itself). Never 0.'),
  HERMES_BWRAP_PATH: z.string().min(1).default('bwrap').describe('bubblewrap sandbox: the bwrap program (a path, or a name looked up in PATH).'),
  HERMES_BWRAP_ALLOWLIST: z.enum(['refuse', 'host']).default('refuse').describe('bubblewrap sandbox: what a Profile\'s network egress "allowlist" means, which bwrap cannot filter by destination: refuse (the call is degraded, nothing runs) or host (the host network, unfiltered, loopback services included).'),
  HERMES_SLACK_API_URL: z.string().url().default('https://slack.com/api/').describe('Base URL of Slack\'s Web API (chat.postMessage, chat.update) for agents whose slack platform sets no apiUrl: point it at an egress proxy or a test server.'),
  HERMES_TELEGRAM_API_URL: z.string().url().default('https://api.telegram.org').describe('Base URL of the Telegram Bot API (requests go to <url>/bot<token>/<method>) for agents whose telegram platform sets no apiUrl: point it at a local Bot API server, an egress proxy or a test server.'),
  HERMES_DISCORD_API_URL: z.string().url().default('https://discord.com/api/v10').describe('Base URL of Discord\'s REST API (channel messages, interaction follow-ups, GET /gateway/bot — the Gateway URL comes from there) for agents whose discord platform sets no apiUrl: point it at an egress proxy or a test server.'),
  HERMES_CONNECTOR_REFRESH_SECONDS: timerSeconds().positive().default(15).describe('How often each gateway re-reads the agents for the long-lived platform connections it campaigns for (Slack Socket Mode, Telegram long polling, the Discord Gateway): a new or changed agent connects within this time.'),
  HERMES_CONNECTORS: z.enum(['on', 'off']).default('on').describe('Whether this gateway campaigns for long-lived platform connections (off: webhooks only, e.g. for gateways that serve only HTTP).'),
  HERMES_TEAMS_OPENID_URL: z.string().url().default('https://login.botframework.com/v1/.well-known/openidconfiguration').describe('OpenID metadata the Bot Framework tokens on inbound Teams activities are checked against (issuer, signing keys via its jwks_uri).'),
  HERMES_TEAMS_LOGIN_URL: z.string().url().default('https://login.microsoftonline.com').describe('Microsoft identity platform base URL: the Teams bot token is requested from <url>/<TEAMS_TENANT_ID>/oauth2/v2.0/token (client credentials).'),
  HERMES_TEAMS_API_URL: z.string().url().optional().describe('Base URL of the Bot Framework connector for agents whose teams platform sets no apiUrl. Unset: replies go to the serviceUrl of the (verified) activity they answer, which must be https. Set: every reply goes here instead (an egress proxy, e.g. in front of https://smba.trafficmanager.net/teams/, or a test server).'),
  HERMES_WEB_ALLOW_CIDRS: z.string().default('').transform((v, ctx) => parseCidrList(v, ctx)).describe('Web tools (web_search, web_extract): comma-separated CIDR ranges the SSRF guard lets through although they are private (an in-cluster SearXNG, an intranet wiki), e.g. 10.20.0.0/16,fd12::/48. Default: none — only public addresses are reachable.'),
  HERMES_WEB_TIMEOUT_SECONDS: seconds(30, 'Web tools: deadline of one outbound request (search provider call or page fetch, redirects included).'),
  HERMES_WEB_MAX_BYTES: z.coerce.number().int().positive().default(10 * 1024 * 1024).describe('Web tools: most bytes of one response body read (10 MB); a longer HTML or text page is cut, a longer PDF refused.'),
  HERMES_KANBAN_DISPATCH: z.enum(['on', 'off']).default('on').describe('Kanban: whether this gateway campaigns to run the dispatcher (one active across replicas, a Postgres advisory lock). off: never here.'),
  HERMES_KANBAN_TICK_SECONDS: seconds(60, 'Kanban: dispatcher tick interval (Hermes dispatch_interval_seconds).'),
  HERMES_KANBAN_FAILURE_LIMIT: z.coerce.number().int().positive().default(2).describe('Kanban: consecutive failed runs (infrastructure failures not counted) before a task is blocked (Hermes failure_limit); a task\'s max_retries wins.'),
  HERMES_KANBAN_CLAIM_TTL_SECONDS: seconds(900, 'Kanban: a claimed task whose turn has not started within this is reclaimed (Hermes claim TTL, 15 min).'),
  HERMES_KANBAN_STALE_SECONDS: seconds(1800, 'Kanban: a running task without a heartbeat (kanban_heartbeat or any kanban_* call of its run) this long is stale: its turn is stopped and the run counts as failed.'),
  HERMES_KANBAN_MAX_RUNTIME_SECONDS: seconds(14400, 'Kanban: longest run of a task whose max_runtime_seconds is unset; a longer one is stopped (timed_out).'),
  HERMES_KANBAN_CLAIMS_PER_TICK: z.coerce.number().int().positive().default(64).describe('Kanban: ready tasks the dispatcher claims (turns it starts) per tick.'),
  OPENAI_BASE_URL: z.string().url().optional().describe('Default base URL for provider "openai" when the Profile sets none (any OpenAI-compatible server).'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional().describe('OTLP/HTTP endpoint; traces are exported when set.'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional().describe('OTLP/HTTP traces endpoint (overrides the generic one).'),
  OTEL_SERVICE_NAME: z.string().optional().describe('service.name of exported spans (default: hermes-<component>).'),
});

export type Config = Readonly<z.infer<typeof configSchema>>;

/** Settings that are credentials meant for Profiles' secret sources (the rest of ours never are). */
const CREDENTIAL_SETTINGS: ReadonlySet<string> = new Set(['OPENAI_API_KEY', 'HERMES_DEV_API_KEY']);

/**
 * Why `name` may never be an allow-listed secret variable, or undefined when it may: the
 * connection strings and every other setting of ours (a Profile author could otherwise have them
 * sent out as a bearer token or hashed into an oracle), Postgres client variables and cluster
 * credentials.
 */
export function forbiddenSecretEnv(name: string): string | undefined {
  if (CREDENTIAL_SETTINGS.has(name)) return undefined;
  if (name in configSchema.shape || name.startsWith('HERMES_')) return 'it is a Hermes setting';
  if (/^PG[A-Z]+$/.test(name)) return 'it is a Postgres client setting';
  if (name === 'KUBECONFIG' || name.startsWith('KUBERNETES_')) return 'it points at cluster credentials';
  return undefined;
}

function parseEnvAllowList(v: string | undefined, ctx: z.RefinementCtx): string[] | undefined {
  if (v === undefined) return undefined;
  if (v.trim().toLowerCase() === 'none') return [];
  const names = v.split(/[\s,]+/).filter(Boolean);
  for (const n of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) ctx.addIssue({ code: 'custom', message: `"${n}" is not an environment variable name` });
    const why = forbiddenSecretEnv(n);
    if (why) ctx.addIssue({ code: 'custom', message: `${n} can never be allowed: ${why}` });
  }
  return [...new Set(names)];
}

/**
 * The allow-listed variables and their values (unset ones left out): the only environment a
 * secret resolver ever sees. `fallback` is the command's default list (used when the setting is unset).
 */
export function allowedSecretEnv(config: Config, env: NodeJS.ProcessEnv, fallback: readonly string[] = []): Readonly<Record<string, string>> {
  const names = config.HERMES_SECRETS_ENV_ALLOW ?? fallback;
  const out: Record<string, string> = {};
  for (const n of names) {
    if (forbiddenSecretEnv(n)) continue; // a command default is checked like the setting
    const v = env[n];
    if (v !== undefined && v !== '') out[n] = v;
  }
  return Object.freeze(out);
}

/** `10.0.0.0/8, fd00::/8` → the ranges, each checked to be a CIDR range. */
function parseCidrList(v: string, ctx: z.RefinementCtx): string[] {
  const out: string[] = [];
  for (const c of v.split(',').map((p) => p.trim()).filter(Boolean)) {
    try {
      ipaddr.parseCIDR(c);
      out.push(c);
    } catch {
      ctx.addIssue({ code: 'custom', message: `"${c}" is not a CIDR range (e.g. 10.20.0.0/16 or fd12::/48)` });
    }
  }
  return out;
}

/** `a=1,b=2` → `{ a: '1', b: '2' }` (resource quantities, label selectors). */
function parseQuantities(v: string, ctx: z.RefinementCtx): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of v.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^([A-Za-z0-9./_-]+)=([A-Za-z0-9._-]+)$/.exec(pair);
    if (!m) ctx.addIssue({ code: 'custom', message: `"${pair}" is not name=value (e.g. cpu=500m,memory=1Gi)` });
    else out[m[1]!] = m[2]!;
  }
  return out;
}

/** Settings of ours that nobody declared: a typo here would otherwise be silently ignored. */
function unknownHermesSettings(env: NodeJS.ProcessEnv): string[] {
  const known = new Set(Object.keys(configSchema.shape));
  // The checkout's ports (hack/ports.sh; README: "override") and the test harness's marks, read by
  // hack/ and test/support/ only: an exported one must not stop `make dev` / `make dev K8S=1`.
  const passthrough = new Set(['HERMES_PG_PORT', 'HERMES_REDIS_PORT', 'HERMES_KUBE_PORT', 'HERMES_ETCD_PORT', 'HERMES_KUBE_DEV_DIR', 'HERMES_TEST_RUN', 'HERMES_TEST_RESULTS', 'HERMES_TEST_PLANE_OWNER']);
  return Object.keys(env).filter((k) => k.startsWith('HERMES_') && !known.has(k) && !passthrough.has(k));
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Validates the environment once. Throws ConfigError with every problem listed, each actionable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Record<keyof Config, unknown>> = {}): Config {
  const problems: string[] = unknownHermesSettings(env).map((k) => `${k}: unknown setting (known: ${[...Object.keys(configSchema.shape)].filter((n) => n.startsWith('HERMES_')).join(', ')})`);
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const v = key in overrides ? overrides[key as keyof Config] : env[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = issue.path.join('.');
      const doc = configSchema.shape[key as keyof typeof configSchema.shape]?.description ?? '';
      const shown = input[key] === undefined ? 'unset' : JSON.stringify(input[key]);
      problems.push(`${key}: ${issue.message} (got ${shown}). ${doc}`);
    }
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return Object.freeze(parsed.data!);
}


/** The long-running commands whose `--help` lists the settings they read. */
export type SettingsCommand = 'gateway' | 'worker' | 'dev' | 'operator';
type Reader = Exclude<SettingsCommand, 'dev'> | 'dev-only';
const g: readonly Reader[] = ['gateway'], w: readonly Reader[] = ['worker'], gw: readonly Reader[] = ['gateway', 'worker'];
const all: readonly Reader[] = ['gateway', 'worker', 'operator'], d: readonly Reader[] = ['dev-only'];
/**
 * Which process reads each setting (`hermes dev` runs a gateway and a worker, so it reads theirs
 * too). Typed over the schema's keys: a new setting does not compile until it says who reads it,
 * and each command's `--help` is generated from this and the descriptions above.
 */
const settingReaders: { readonly [K in keyof typeof configSchema.shape]: readonly Reader[] } = {
  DATABASE_URL: all, REDIS_URL: gw, HERMES_PORT: g, HERMES_HOST: gw, HERMES_WORKER_PORT: w, HERMES_METRICS_PORT: gw, HERMES_METRICS_TOKEN: gw, HERMES_ADMIN_TOKEN: g,
  HERMES_MAX_WAITS_PER_KEY: g, HERMES_LOG_LEVEL: all, HERMES_QUEUE_PREFIX: gw, HERMES_MAX_BODY_BYTES: g, HERMES_MAX_MESSAGE_CHARS: g, HERMES_MAX_QUEUED_PER_SESSION: g, HERMES_DB_POOL_SIZE: all,
  HERMES_DB_QUERY_TIMEOUT_SECONDS: all, HERMES_REDIS_TIMEOUT_SECONDS: gw, HERMES_LEASE_TTL_SECONDS: w, HERMES_LEASE_RENEW_SECONDS: w, HERMES_HEARTBEAT_SECONDS: w,
  HERMES_INSTANCE_TTL_SECONDS: gw, HERMES_SWEEP_SECONDS: w, HERMES_SWEEP_GRACE_SECONDS: w, HERMES_TURN_CONCURRENCY: w, HERMES_DELIVERY_CONCURRENCY: w, HERMES_REVIEW_CONCURRENCY: w,
  HERMES_CURATOR_INTERVAL_HOURS: w, HERMES_CRON_TICK_SECONDS: w, HERMES_DELIVERY_MAX_ATTEMPTS: w, HERMES_DELIVERY_MAX_AGE_SECONDS: w, HERMES_PROGRESS_DELAY_SECONDS: w,
  HERMES_PROGRESS_EDIT_SECONDS: w, HERMES_DELIVERY_ATTEMPT_SECONDS: w, HERMES_TOOL_RESULT_RETENTION_SECONDS: w, HERMES_APPROVAL_POLL_MS: w, HERMES_TURN_STALL_SECONDS: w,
  HERMES_TURN_WATCHDOG_POLL_SECONDS: w, HERMES_MODEL_TIMEOUT_SECONDS: w, HERMES_REPLY_WAIT_SECONDS: g, HERMES_SHUTDOWN_GRACE_SECONDS: w, HERMES_DEV_API_KEY: d, HERMES_DEV_MODEL: d,
  HERMES_DEV_MANIFESTS: d, OPENAI_API_KEY: d, HERMES_SECRETS_SOURCE: gw, HERMES_SECRETS_DIR: gw, HERMES_SECRETS_FILE: gw, HERMES_SECRETS_ENV_ALLOW: all, HERMES_SECRETS_CACHE_SECONDS: gw,
  HERMES_SANDBOX_BACKEND: w, HERMES_SANDBOX_IMAGE: w, HERMES_SANDBOX_SERVICE_ACCOUNT: w, HERMES_SANDBOX_UID: w, HERMES_SANDBOX_REQUESTS: w, HERMES_SANDBOX_LIMITS: w,
  HERMES_SANDBOX_TMP_SIZE: w, HERMES_SANDBOX_START_TIMEOUT_SECONDS: w, HERMES_SANDBOX_STORAGE_CLASS: w, HERMES_SANDBOX_RUNTIME_CLASS: w, HERMES_SANDBOX_DNS_NAMESPACE: w,
  HERMES_SANDBOX_DNS_SELECTOR: w, HERMES_SANDBOX_POLICY_REFRESH_SECONDS: w, HERMES_WORKSPACES_DIR: w, HERMES_BWRAP_UID: w, HERMES_BWRAP_PATH: w, HERMES_BWRAP_ALLOWLIST: w,
  HERMES_SLACK_API_URL: gw, HERMES_TELEGRAM_API_URL: gw, HERMES_DISCORD_API_URL: gw, HERMES_CONNECTOR_REFRESH_SECONDS: g, HERMES_CONNECTORS: g, HERMES_TEAMS_OPENID_URL: g,
  HERMES_TEAMS_LOGIN_URL: w, HERMES_TEAMS_API_URL: w, HERMES_WEB_ALLOW_CIDRS: w, HERMES_WEB_TIMEOUT_SECONDS: w, HERMES_WEB_MAX_BYTES: w, HERMES_KANBAN_DISPATCH: g,
  HERMES_KANBAN_TICK_SECONDS: g, HERMES_KANBAN_FAILURE_LIMIT: g, HERMES_KANBAN_CLAIM_TTL_SECONDS: gw, HERMES_KANBAN_STALE_SECONDS: g, HERMES_KANBAN_MAX_RUNTIME_SECONDS: g,
  HERMES_KANBAN_CLAIMS_PER_TICK: g, OPENAI_BASE_URL: w, OTEL_EXPORTER_OTLP_ENDPOINT: gw, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: gw, OTEL_SERVICE_NAME: gw,
};

/**
 * Settings read outside the schema, by the Kubernetes client and from the Downward API; `--help`
 * lists them beside the schema's.
 */
export const clusterSettings: { readonly [name: string]: { readonly readers: readonly Reader[]; readonly description: string } } = {
  KUBECONFIG: {
    readers: all,
    description: 'The cluster config file, as for kubectl; unset: ~/.kube/config, else the in-cluster ServiceAccount (in a Pod). The operator watches and writes its resources there; gateway and worker read Secrets there with HERMES_SECRETS_SOURCE=kubernetes, and the worker runs sandbox Pods there with HERMES_SANDBOX_BACKEND=kubernetes.',
  },
  POD_NAME: { readers: ['operator'], description: 'Leader election identity when --identity is not given (set it from the Downward API, fieldRef metadata.name); unset: hostname and a random suffix.' },
  POD_NAMESPACE: { readers: ['operator'], description: 'Namespace of the leader Lease when neither --lease-namespace nor --namespace is given (Downward API, fieldRef metadata.namespace); unset: default.' },
};

function readsSetting(command: SettingsCommand, readers: readonly Reader[]): boolean {
  return command === 'dev' ? readers.some((r) => r !== 'operator') : readers.includes(command);
}

/** `--help` text listing every setting, or those `command` reads. */
export function describeSettings(command?: SettingsCommand): string {
  const settings = [
    ...Object.entries(configSchema.shape).map(([k, s]) => ({ name: k, readers: settingReaders[k as keyof typeof settingReaders], description: s.description ?? '' })),
    ...Object.entries(clusterSettings).map(([k, s]) => ({ name: k, ...s })),
  ];
  return settings.filter((s) => command === undefined || readsSetting(command, s.readers))
    .map((s) => `  ${s.name.padEnd(36)} ${s.description}`).join('\n');
}
