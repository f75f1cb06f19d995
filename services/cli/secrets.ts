// Which secret source a process reads Profile references from (HERMES_SECRETS_SOURCE), built
// once at start with a clear error when it cannot work. The CLI is the one place that hands
// environment values down, and it hands down only the allow-listed variables
// (HERMES_SECRETS_ENV_ALLOW): never the process environment as a whole.
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { allowedSecretEnv, ConfigError, type Config } from '../core/index.js';
import { FileSecretStore, KubernetesSecretStore, MemorySecretStore, secretResolver, type SecretData, type SecretResolver } from '../agent/index.js';
import { loadManifests, type SecretLookup } from '../../operator/index.js';

export type SecretSource = NonNullable<Config['HERMES_SECRETS_SOURCE']>;

export interface SecretSetup {
  /** The command's source when HERMES_SECRETS_SOURCE is unset. */
  defaultSource: SecretSource;
  /** The command's allow-list when HERMES_SECRETS_ENV_ALLOW is unset. */
  defaultEnvAllow?: readonly string[];
  /** Values the command itself owns (e.g. `hermes dev`'s generated API key), allowed as they are. */
  ownValues?: Readonly<Record<string, string>>;
  /** Secret manifests beside the command's other manifests (`hermes dev`), for `local`. */
  manifests?: readonly SecretData[];
  /** The cluster for `kubernetes` (default: KUBECONFIG, ~/.kube/config or the in-cluster ServiceAccount). */
  kubeConfig?: () => KubeConfig;
}

const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';
const hint = 'on one machine set HERMES_SECRETS_SOURCE=files (HERMES_SECRETS_DIR) or HERMES_SECRETS_SOURCE=local (HERMES_SECRETS_FILE, HERMES_SECRETS_ENV_ALLOW)';

/** The allow-listed variables of this process, with the command's own values. */
export function secretEnv(config: Config, setup: Pick<SecretSetup, 'defaultEnvAllow' | 'ownValues'>, env: NodeJS.ProcessEnv = process.env): Readonly<Record<string, string>> {
  return { ...allowedSecretEnv(config, env, setup.defaultEnvAllow ?? []), ...setup.ownValues };
}

function clusterConfig(env: NodeJS.ProcessEnv): KubeConfig {
  const inCluster = !!env.KUBERNETES_SERVICE_HOST;
  if (!env.KUBECONFIG && !inCluster && !existsSync(join(homedir(), '.kube', 'config'))) {
    throw new ConfigError(`HERMES_SECRETS_SOURCE=kubernetes (the default of this command) needs a cluster to read Secrets from: run in a Pod with a ServiceAccount, set KUBECONFIG, or ${hint}.`);
  }
  if (inCluster && !env.KUBECONFIG && !existsSync(SA_TOKEN)) {
    throw new ConfigError(`HERMES_SECRETS_SOURCE=kubernetes: this Pod has no ServiceAccount token (${SA_TOKEN}); set automountServiceAccountToken: true on the worker and bind its ServiceAccount to the hermes-worker ClusterRole, or ${hint}.`);
  }
  const kc = new KubeConfig();
  try {
    kc.loadFromDefault();
  } catch (err) {
    throw new ConfigError(`HERMES_SECRETS_SOURCE=kubernetes: the cluster configuration could not be loaded (${(err as Error).message}); fix KUBECONFIG, or ${hint}.`);
  }
  return kc;
}

/**
 * The worker's cluster credentials for the kubernetes sandbox backend (KUBECONFIG, ~/.kube/config
 * or the in-cluster ServiceAccount); throws a message saying what is missing.
 */
export function clusterKubeConfig(env: NodeJS.ProcessEnv = process.env): KubeConfig {
  if (!env.KUBECONFIG && !env.KUBERNETES_SERVICE_HOST && !existsSync(join(homedir(), '.kube', 'config'))) {
    throw new ConfigError('no cluster credentials (no KUBECONFIG, ~/.kube/config or in-cluster ServiceAccount); run the worker in the cluster or set KUBECONFIG');
  }
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

async function localSecrets(config: Config, manifests: readonly SecretData[]): Promise<SecretData[]> {
  const file = config.HERMES_SECRETS_FILE;
  if (!file) return [...manifests];
  if (!existsSync(file)) throw new ConfigError(`HERMES_SECRETS_FILE: ${file} does not exist (a YAML file of Secret manifests).`);
  const set = await loadManifests(file).catch((err: Error) => { throw new ConfigError(`HERMES_SECRETS_FILE: ${err.message}`); });
  return [...manifests, ...set.secrets];
}

/** The resolver of this process's Profile references. Throws ConfigError when its source cannot work. */
export async function openSecrets(config: Config, setup: SecretSetup, env: NodeJS.ProcessEnv = process.env): Promise<SecretResolver> {
  const allowed = secretEnv(config, setup, env);
  const source = config.HERMES_SECRETS_SOURCE ?? setup.defaultSource;
  switch (source) {
    case 'kubernetes': {
      const kc = setup.kubeConfig ? setup.kubeConfig() : clusterConfig(env);
      return secretResolver(new KubernetesSecretStore(kc, { ttlMs: config.HERMES_SECRETS_CACHE_SECONDS * 1_000 }), { env: allowed });
    }
    case 'files': {
      const dir = config.HERMES_SECRETS_DIR;
      if (!existsSync(dir) || !statSync(dir).isDirectory()) {
        throw new ConfigError(`HERMES_SECRETS_SOURCE=files: HERMES_SECRETS_DIR ${dir} is not a folder (expected <namespace>/<secret name>/<key> files, e.g. mounted Secrets).`);
      }
      return secretResolver(new FileSecretStore(dir), { env: allowed });
    }
    case 'local':
      return secretResolver(new MemorySecretStore(await localSecrets(config, setup.manifests ?? [])), { env: allowed, envFallback: true });
  }
}

/** The same resolver as compile's lookup (API key hashes, platform credential checks). */
export const asLookup = (r: SecretResolver): SecretLookup => ({ value: (namespace, ref) => r.resolve(namespace, ref) });
