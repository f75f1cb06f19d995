// `hermes dev --k8s` (behind `make dev K8S=1`): instead of compiling manifest files directly,
// install the CRDs into the dev kube-apiserver, apply the manifests there (hermes.dev objects,
// ConfigMaps and Secrets; Secrets they reference and the folder lacks are created from the
// allow-listed variables, as `hermes dev` resolves them), and run the operator against
// it — so the local loop exercises the same path as a cluster.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import type { Db, Logger } from '../core/index.js';
import { startOperator, type OperatorHandle } from '../../operator/manager.js';

const crdsDir = fileURLToPath(new URL('../../crds/', import.meta.url));
const fieldManager = 'hermes-dev';

async function yamlDocs(dir: string, recursive: boolean): Promise<KubernetesObject[]> {
  const out: KubernetesObject[] = [];
  for (const e of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = join(dir, e.name);
    if (e.isDirectory() && recursive) out.push(...(await yamlDocs(p, true)));
    else if (/\.ya?ml$/.test(e.name)) out.push(...parseAllDocuments(await readFile(p, 'utf8')).map((d) => d.toJSON() as KubernetesObject).filter(Boolean));
  }
  return out;
}

/** Every `{ secretKeyRef: { name, key } }` and platform credential key in the manifests, by Secret name. */
export function referencedSecretKeys(docs: unknown[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (name: string, key: string) => out.set(name, (out.get(name) ?? new Set()).add(key));
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (!v || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    const ref = o.secretKeyRef as { name?: string; key?: string } | undefined;
    if (ref?.name && ref.key) add(ref.name, ref.key);
    const creds = o.credentials as { secretRef?: { name?: string }; keys?: string[] } | undefined;
    if (creds?.secretRef?.name) for (const k of creds.keys ?? []) add(creds.secretRef.name, k);
    Object.values(o).forEach(walk);
  };
  walk(docs);
  return out;
}

async function apply(api: KubernetesObjectApi, obj: KubernetesObject): Promise<void> {
  await api.patch(obj, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
}

/** Whether a Profile among `docs` gives its agents commands (the terminal or file toolset). */
function needsSandbox(docs: KubernetesObject[]): boolean {
  return docs.some((d) => {
    const toolsets = (d as { spec?: { toolsets?: unknown } }).spec?.toolsets;
    return d.kind === 'Profile' && Array.isArray(toolsets) && toolsets.some((t) => t === 'terminal' || t === 'file');
  });
}

/**
 * Makes `namespace` what a platform team (or the Helm chart) makes a sandbox namespace: Pod
 * Security `restricted` enforced, and the sandbox ServiceAccount without a token — so the
 * Agents' SandboxReady condition is True and their commands run in Pods from the first call.
 */
async function prepareSandboxNamespace(api: KubernetesObjectApi, namespace: string, serviceAccount: string): Promise<void> {
  await apply(api, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } });
  await apply(api, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: serviceAccount, namespace }, automountServiceAccountToken: false } as KubernetesObject);
}

/** Options of {@link applyDevManifests}. */
export interface DevManifestOptions {
  /** Where manifests without a namespace go. @defaultValue 'default' */
  namespace?: string;
  /** The sandbox ServiceAccount (HERMES_SANDBOX_SERVICE_ACCOUNT) to create where agents run commands. @defaultValue 'hermes-sandbox' */
  sandboxServiceAccount?: string;
}

/**
 * Installs the CRDs, the Secrets (the folder's, else from `env`: only pass allow-listed variables)
 * and the hermes.dev manifests of `dir`; when a Profile enables the terminal or file toolset, the
 * namespaces of the Agents become sandbox namespaces (see {@link prepareSandboxNamespace}).
 * Returns the Agents' keys.
 */
export async function applyDevManifests(kc: KubeConfig, dir: string, env: Readonly<Record<string, string | undefined>>, opts: DevManifestOptions = {}): Promise<string[]> {
  const namespace = opts.namespace ?? 'default';
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const crd of await yamlDocs(crdsDir, false)) await apply(api, crd);
  const docs = (await yamlDocs(dir, true)).filter((d) => d.apiVersion === 'hermes.dev/v1alpha1' || (d.apiVersion === 'v1' && (d.kind === 'ConfigMap' || d.kind === 'Secret')))
    .map((d) => ({ ...d, metadata: { ...d.metadata, namespace: d.metadata?.namespace ?? namespace } }));
  const given = new Set(docs.filter((d) => d.kind === 'Secret').map((d) => `${d.metadata.namespace}/${d.metadata.name}`));
  for (const [name, keys] of referencedSecretKeys(docs)) {
    if (given.has(`${namespace}/${name}`)) continue;
    const stringData = Object.fromEntries([...keys].filter((k) => env[k] !== undefined).map((k) => [k, env[k]!]));
    if (Object.keys(stringData).length) await apply(api, { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, stringData } as KubernetesObject);
  }
  // The CRDs need a moment to be served: retry the first apply until the kind is known.
  const deadline = Date.now() + 30_000;
  for (const d of docs) {
    for (;;) {
      try {
        await apply(api, d);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }
  const agents = docs.filter((d) => d.kind === 'Agent');
  if (needsSandbox(docs)) {
    for (const ns of new Set(agents.map((d) => d.metadata!.namespace!))) await prepareSandboxNamespace(api, ns, opts.sandboxServiceAccount ?? 'hermes-sandbox');
  }
  return agents.map((d) => `${d.metadata!.namespace}/${d.metadata!.name}`);
}

/** Applies the manifests and runs the operator in this process (no leader election). */
export async function startDevOperator(opts: { kc: KubeConfig; db: Db; log: Logger; dir: string; env: Readonly<Record<string, string>>; gatewayUrl: string; sandboxServiceAccount: string }): Promise<{ agents: string[]; operator: OperatorHandle }> {
  const agents = await applyDevManifests(opts.kc, opts.dir, opts.env, { sandboxServiceAccount: opts.sandboxServiceAccount });
  const operator = await startOperator({ kc: opts.kc, db: opts.db, log: opts.log, gatewayUrl: opts.gatewayUrl, leaderElection: false, secretEnv: opts.env });
  return { agents, operator };
}
