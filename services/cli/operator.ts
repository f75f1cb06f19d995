// `hermes operator`: runs the Profile and Agent controllers against a cluster (in-cluster config,
// or KUBECONFIG / ~/.kube/config) and compiles Agents into Postgres (DATABASE_URL).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { KubeConfig } from '@kubernetes/client-node';
import { allowedSecretEnv, ConfigError, createLogger, loadConfig, MAX_TIMER_SECONDS, openDb } from '../core/index.js';
import { startOperator, type OperatorHandle, type OperatorOptions } from '../../operator/manager.js';
import { createOperatorMetrics } from '../../operator/runtime/metrics.js';
import { startOperatorProbes } from '../../operator/probes.js';
import { publishBundledSkillsAtStart } from '../../operator/skills/bundled.js';
import type { SandboxHygieneOptions } from '../../operator/controllers/sandbox-policy.js';
import { onShutdown } from './runtime.js';
import { namespaceName, objectName } from './kube-names.js';
import { kubernetesSandboxSettings } from '../sandbox/index.js';

/** The cluster to talk to: KUBECONFIG, ~/.kube/config or the in-cluster ServiceAccount; a clear error otherwise. */
export function loadClusterConfig(env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const inCluster = !!env.KUBERNETES_SERVICE_HOST;
  if (!env.KUBECONFIG && !inCluster && !existsSync(join(homedir(), '.kube', 'config'))) {
    throw new ConfigError('hermes operator needs a cluster: set KUBECONFIG (e.g. `make dev K8S=1` prints one) or run it in a Pod with a ServiceAccount.');
  }
  const kc = new KubeConfig();
  const source = inCluster && !env.KUBECONFIG ? 'the in-cluster ServiceAccount' : env.KUBECONFIG ? `KUBECONFIG=${env.KUBECONFIG}` : '~/.kube/config';
  try {
    kc.loadFromDefault();
  } catch (err) {
    // A KUBECONFIG that names a missing or unreadable file, or one that is not a kubeconfig.
    throw new ConfigError(`Cannot load the cluster config (${source}): ${(err as Error).message.split('\n')[0]}`);
  }
  if (!kc.getCurrentCluster()) throw new ConfigError(`The cluster config (${source}) names no cluster: its current-context is unset or names no cluster.`);
  return kc;
}

export interface OperatorCliOptions {
  namespace?: string;
  gatewayUrl?: string;
  leaderElect: boolean;
  leaseNamespace?: string;
  leaseName?: string;
  identity?: string;
  image?: string;
  runtimeSecret?: string;
  /** `--no-sandbox-hygiene` sets false. */
  sandboxHygiene?: boolean;
  sandboxResyncSeconds?: number;
  sandboxGraceSeconds?: number;
  workspaceTtlSeconds?: number;
  /** Port of /healthz, /readyz and /metrics. */
  httpPort: number;
  /** `false` (from `--no-http`): no probes or metrics. */
  http?: boolean;
  httpHost?: string;
}

/** Sandbox hygiene options from the CLI flags (false with --no-sandbox-hygiene). */
export function sandboxOptions(opts: OperatorCliOptions): SandboxHygieneOptions | false {
  if (opts.sandboxHygiene === false) return false;
  const { sandboxResyncSeconds: resync, sandboxGraceSeconds: grace, workspaceTtlSeconds: ttl } = opts;
  return {
    ...(resync !== undefined ? { resyncMs: Math.max(resync, 1) * 1000 } : {}),
    ...(grace !== undefined ? { finishedGraceMs: grace * 1000, unannotatedGraceMs: grace * 1000 } : {}),
    ...(ttl !== undefined ? { workspaceTtlSeconds: ttl } : {}),
  };
}

/** The manager's options from the CLI flags (only those given; the manager has the defaults). */
function managerOptions(opts: OperatorCliOptions, env: NodeJS.ProcessEnv): Partial<OperatorOptions> {
  const identity = opts.identity ?? env.POD_NAME;
  return {
    leaderElection: opts.leaderElect,
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
    ...(opts.gatewayUrl ? { gatewayUrl: opts.gatewayUrl } : {}),
    ...(opts.leaseNamespace ? { leaseNamespace: opts.leaseNamespace } : {}),
    ...(opts.leaseName ? { leaseName: opts.leaseName } : {}),
    ...(identity ? { identity } : {}),
    runtime: { ...(opts.image ? { image: opts.image } : {}), ...(opts.runtimeSecret ? { envSecret: opts.runtimeSecret } : {}) },
    sandbox: sandboxOptions(opts),
  };
}

/** Starts the operator with CLI options, and its probe/metrics server unless `--no-http`. */
export async function runOperator(opts: OperatorCliOptions, env: NodeJS.ProcessEnv = process.env): Promise<{ handle: OperatorHandle; url?: string; close(): Promise<void> }> {
  const config = loadConfig(env, { REDIS_URL: env.REDIS_URL ?? 'redis://unused:6379' });
  const kc = loadClusterConfig(env);
  const managed = managerOptions(opts, env);
  const log = createLogger('operator', config.HERMES_LOG_LEVEL);
  const db = openDb(config.DATABASE_URL, { applicationName: 'hermes-operator', queryTimeoutMs: config.HERMES_DB_QUERY_TIMEOUT_SECONDS * 1_000, max: config.HERMES_DB_POOL_SIZE });
  const metrics = createOperatorMetrics();
  await publishBundledSkillsAtStart(db, log);
  const handle = await startOperator({ kc, db, log, metrics, ...managed, secretEnv: allowedSecretEnv(config, env), sandboxPod: kubernetesSandboxSettings(config) });
  const probes = opts.http === false ? undefined : await startOperatorProbes({ handle, db, metrics, log, host: opts.httpHost ?? '0.0.0.0', port: opts.httpPort });
  if (probes) log.info({ url: probes.url }, 'Operator probes and metrics listening');
  return { handle, ...(probes ? { url: probes.url } : {}), close: async () => { await handle.stop(); await probes?.close(); await db.close(); } };
}

/** A whole number of seconds from 0 to `max`, checked when the flag is read (before any cluster is needed). */
const seconds = (max: number, why: string) => (v: string): number => {
  if (!/^\d+$/.test(v) || Number(v) > max) throw new InvalidArgumentError(`expected a whole number of seconds from 0 to ${max}${why}.`);
  return Number(v);
};
const timerSeconds = seconds(MAX_TIMER_SECONDS, ' (the longest timer, ≈ 24.8 days)');

/** A port given on the command line (`hermes operator --http-port`, `hermes dev --port`). */
export function portNumber(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('expected a port number from 0 to 65535.');
  return Number(v);
}

export const operatorCommand = new Command('operator')
  .description('Run the Kubernetes operator: watch Agent, Profile, Skill and CronJob resources, compile them into Postgres (DATABASE_URL), report status. Needs KUBECONFIG or an in-cluster ServiceAccount.')
  .option('-n, --namespace <ns>', 'watch one namespace only (a namespaced RoleBinding then suffices); default: all namespaces', namespaceName)
  .option('--gateway-url <url>', 'gateway base URL reported in Agent status', 'http://hermes-gateway:8080')
  .option('--no-leader-elect', 'skip leader election (only when exactly one replica runs)')
  .option('--lease-namespace <ns>', 'namespace of the leader Lease (default: --namespace, POD_NAMESPACE or default)', namespaceName)
  .option('--lease-name <name>', 'name of the leader Lease', objectName, 'hermes-operator')
  .option('--identity <id>', 'leader election identity (default: POD_NAME or hostname + random suffix)')
  .option('--image <image>', 'image of the Deployments of `runtime: dedicated` Agents (default: ghcr.io/hermes-operator/hermes:0.1.0)')
  .option('--runtime-secret <name>', 'Secret in the Agent\'s namespace with DATABASE_URL and REDIS_URL for dedicated pods (default: hermes-runtime)', objectName)
  .option('--no-sandbox-hygiene', 'do not delete stray sandbox Pods and expired workspace PVCs (then the operator needs no Pod/PVC permissions)')
  .option('--sandbox-resync-seconds <n>', 'how often every sandbox Pod and workspace PVC is checked again (default: 60)', timerSeconds)
  .option('--sandbox-grace-seconds <n>', 'age after which a finished sandbox Pod or one without a hermes.dev/admission-id is deleted (default: 60)', timerSeconds)
  .option('--workspace-ttl-seconds <n>', 'TTL of workspace PVCs without a hermes.dev/ttl-seconds annotation (default: 604800, 7 days)', seconds(100 * 365 * 24 * 3600, ''))
  .option('--http-port <port>', '/healthz, /readyz and Prometheus /metrics (controller-runtime metric names) on this port; 0 picks a free one', portNumber, 8081)
  .option('--http-host <host>', 'listen address of the probe and metrics server', '0.0.0.0')
  .option('--no-http', 'serve no probes or metrics')
  .action(async (opts: OperatorCliOptions) => {
    const { handle, close } = await runOperator(opts);
    const log = createLogger('operator', process.env.HERMES_LOG_LEVEL ?? 'info');
    log.info({ identity: handle.identity }, 'Operator running; Ctrl-C to stop');
    onShutdown(log, close);
  });
