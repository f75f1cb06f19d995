// What every controller needs: the watched caches, the writers and the database.
import type { KubeConfig, KubernetesObject, V1ConfigMap, V1Deployment, V1PersistentVolumeClaim, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import type { Db, Logger } from '../../services/core/index.js';
import type { KubernetesSandboxSettings } from '../../services/sandbox/index.js';
import type { Condition } from '../api/common.js';
import type { EventRecorder } from '../runtime/events.js';
import type { WatchedCache } from '../runtime/informer.js';
import type { ResourceWriter } from '../runtime/kube.js';
import type { CompileSources, SecretLookup } from '../compile.js';
import { configMapText, type ConfigMapLookup } from '../texts.js';

/** A custom resource as the apiserver returns it (defaults applied, status possibly absent). */
export interface RawObject extends KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: NonNullable<KubernetesObject['metadata']> & { name: string; namespace: string };
  spec?: unknown;
  status?: { conditions?: Condition[]; observedGeneration?: number } & Record<string, unknown>;
}

export interface Caches {
  agents: WatchedCache<RawObject>;
  profiles: WatchedCache<RawObject>;
  skills: WatchedCache<RawObject>;
  cronjobs: WatchedCache<RawObject>;
  secrets: WatchedCache<V1Secret>;
  /** ConfigMaps, for Profiles' personaFrom / contextFiles[].contentFrom. */
  configMaps: WatchedCache<V1ConfigMap>;
  /** Children of dedicated Agents (label app.kubernetes.io/managed-by=hermes-operator). */
  children: { deployments: WatchedCache<V1Deployment>; services: WatchedCache<V1Service> };
  /** Sandbox Pods and workspace PVCs (label hermes.dev/component); absent when sandbox hygiene is off. */
  sandbox?: { pods: WatchedCache<V1Pod>; workspaces: WatchedCache<V1PersistentVolumeClaim> };
}

/** How the operator runs an Agent's dedicated gateway and worker (runtime mode `dedicated`). */
export interface RuntimeOptions {
  /** @defaultValue `ghcr.io/hermes-operator/hermes:0.1.0` */
  image?: string;
  /** Secret (in the Agent's namespace) with DATABASE_URL and REDIS_URL for the pods. @defaultValue `hermes-runtime` */
  envSecret?: string;
}

export interface OperatorContext {
  kc: KubeConfig;
  caches: Caches;
  runtime: RuntimeOptions;
  writer: ResourceWriter;
  events: EventRecorder;
  db: Db;
  log: Logger;
  /** Base URL of the gateway, for the URLs reported in Agent status. */
  gatewayUrl: string;
  /** The only variables `env:` secret sources resolve to (HERMES_SECRETS_ENV_ALLOW, with their values). */
  secretEnv: Readonly<Record<string, string>>;
  /** The install's sandbox defaults, for the Agents' SandboxReady condition. @defaultValue kubernetes, hermes-sandbox */
  sandbox?: { backend: 'kubernetes' | 'bubblewrap'; serviceAccountName: string };
  /** The one namespace the operator watches (`--namespace`), where it lists what it wrote. @defaultValue all namespaces */
  watchNamespace?: string;
  /** The install's sandbox Pod settings (HERMES_SANDBOX_*), for the SandboxTemplates of mode session. @defaultValue defaultKubernetesSandboxSettings */
  sandboxPod?: KubernetesSandboxSettings;
}

/**
 * Secret values from the watched Secret cache, in the object's own namespace. An empty name is an
 * `env:` source: only the allow-listed variables resolve, never the operator's environment as a
 * whole (an Agent naming DATABASE_URL as an API key would otherwise turn the gateway into an
 * oracle for it).
 */
export function cachedSecrets(ctx: OperatorContext): SecretLookup {
  return {
    value: async (namespace, ref) => {
      if (!ref.name) return Object.hasOwn(ctx.secretEnv, ref.key) ? ctx.secretEnv[ref.key] : undefined;
      const data = ctx.caches.secrets.get(ref.name, namespace)?.data?.[ref.key];
      return data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8');
    },
  };
}

/** ConfigMap texts from the watched ConfigMap cache. */
export function cachedConfigMaps(ctx: OperatorContext): ConfigMapLookup {
  return {
    data: (namespace, name) => {
      const cm = ctx.caches.configMaps.get(name, namespace);
      return cm ? configMapText(cm) : undefined;
    },
  };
}

/** What compile reads in the operator: the watched Secrets and ConfigMaps. */
export function cachedSources(ctx: OperatorContext): CompileSources {
  return { secrets: cachedSecrets(ctx), configMaps: cachedConfigMaps(ctx) };
}

/** A Secret and key check that never touches the value: 'ok', or what is missing. */
export function secretKeyState(ctx: OperatorContext, namespace: string, ref: { name: string; key: string }): 'ok' | 'SecretNotFound' | 'SecretKeyMissing' {
  const s = ctx.caches.secrets.get(ref.name, namespace);
  if (!s) return 'SecretNotFound';
  return s.data?.[ref.key] !== undefined || s.stringData?.[ref.key] !== undefined ? 'ok' : 'SecretKeyMissing';
}

/** Deep equality of JSON values (status comparisons). */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]));
  }
  return v;
}
