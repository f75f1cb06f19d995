// `hermes dev --k8s` (behind `make dev K8S=1`): instead of compiling manifest files directly,
// install the CRDs into the dev kube-apiserver, apply the manifests there (hermes.dev objects,
// ConfigMaps and Secrets; Secrets they reference and the folder lacks are created from the
// allow-listed variables, as `hermes dev` resolves them), delete what an earlier run applied and
// the folder no longer declares, and run the operator against it — so the local loop exercises
// the same path as a cluster.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import type { Db, Logger } from '../core/index.js';
import { startOperator, type OperatorHandle } from '../../operator/manager.js';
import { ManifestError } from '../../operator/index.js';
import { markApplied, objectKey, pruneDevObjects } from './dev-k8s-prune.js';
import { applyCrd, whenServed } from './dev-k8s-crds.js';

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

/**
 * The Secrets the manifests reference and the folder lacks, each in the namespace of the objects
 * that name it (a reference is always to the object's own namespace), from the allow-listed `env`.
 */
function secretsFromEnv(docs: KubernetesObject[], env: Readonly<Record<string, string | undefined>>): KubernetesObject[] {
  const given = new Set(docs.filter((d) => d.kind === 'Secret').map((d) => `${d.metadata!.namespace}/${d.metadata!.name}`));
  const wanted = new Map<string, { namespace: string; name: string; keys: Set<string> }>();
  for (const d of docs.filter((x) => x.kind !== 'Secret')) {
    const namespace = d.metadata!.namespace!;
    for (const [name, keys] of referencedSecretKeys([d])) {
      const at = `${namespace}/${name}`;
      if (given.has(at)) continue;
      const entry = wanted.get(at) ?? { namespace, name, keys: new Set<string>() };
      keys.forEach((k) => entry.keys.add(k));
      wanted.set(at, entry);
    }
  }
  const out: KubernetesObject[] = [];
  for (const { namespace, name, keys } of wanted.values()) {
    const stringData = Object.fromEntries([...keys].filter((k) => env[k] !== undefined).map((k) => [k, env[k]!]));
    if (Object.keys(stringData).length) out.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, stringData } as KubernetesObject);
  }
  return out;
}

async function apply(api: KubernetesObjectApi, obj: KubernetesObject): Promise<void> {
  await api.patch(obj, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
}

/** The apiserver's own message of a refused request (its Status body), else the error's. */
function apiMessage(err: unknown): string {
  try {
    const body = (err as { body?: unknown }).body;
    const status = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: string } | undefined;
    if (status?.message) return status.message;
  } catch { /* not a Status body */ }
  return (err as Error).message;
}

/** Creates the namespaces the manifests name that the cluster lacks (a dev cluster starts with `default` only). */
async function ensureNamespaces(api: KubernetesObjectApi, objects: KubernetesObject[]): Promise<void> {
  for (const name of new Set(objects.map((o) => o.metadata!.namespace!))) {
    try {
      await api.read({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
      await api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    }
  }
}

/**
 * Server-side applies `objects` in order. The CRDs need a moment to be served: only that is
 * retried (30 s); anything else the apiserver refuses stops `hermes dev` with its message and the
 * object's name.
 */
async function applyAll(api: KubernetesObjectApi, objects: KubernetesObject[]): Promise<void> {
  for (const o of objects) {
    await whenServed(() => apply(api, o), (err) => new ManifestError(`${o.kind} ${o.metadata?.namespace}/${o.metadata?.name}: the dev cluster refused it: ${apiMessage(err)}`));
  }
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
  /** HERMES_DEV_MODEL: the model name every Profile of the folder uses instead of its own, as file-mode `hermes dev` does. @defaultValue the Profiles' own */
  model?: string | undefined;
}

/** A Profile with `spec.model.model` replaced by `model` (HERMES_DEV_MODEL); other objects as they are. */
function withDevModel(d: KubernetesObject, model: string | undefined): KubernetesObject {
  const spec = (d as { spec?: { model?: Record<string, unknown> } }).spec;
  if (!model || d.kind !== 'Profile' || !spec?.model) return d;
  return { ...d, spec: { ...spec, model: { ...spec.model, model } } } as KubernetesObject;
}

/** What {@link applyDevManifests} did: the Agents' keys, and the objects an earlier run applied that it deleted. */
export interface DevManifestResult { agents: string[]; pruned: string[] }

/**
 * Installs the CRDs, then the folder's hermes.dev manifests, ConfigMaps and Secrets (Secrets it
 * references and lacks come from `env`: only pass allow-listed variables), creating the
 * namespaces they name; when a Profile enables the terminal or file toolset, the namespaces of
 * the Agents become sandbox namespaces (see {@link prepareSandboxNamespace}). Then deletes what an
 * earlier run applied and the folder no longer declares ({@link pruneDevObjects}).
 */
export async function applyDevManifests(kc: KubeConfig, dir: string, env: Readonly<Record<string, string | undefined>>, opts: DevManifestOptions = {}): Promise<DevManifestResult> {
  const namespace = opts.namespace ?? 'default';
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const crd of await yamlDocs(crdsDir, false)) await applyCrd(kc, crd, fieldManager);
  const docs = (await yamlDocs(dir, true)).filter((d) => d.apiVersion === 'hermes.dev/v1alpha1' || (d.apiVersion === 'v1' && (d.kind === 'ConfigMap' || d.kind === 'Secret')))
    .map((d) => withDevModel({ ...d, metadata: { ...d.metadata, namespace: d.metadata?.namespace ?? namespace } }, opts.model));
  // Secrets first: an Agent applied before its Secret would wait for it.
  const objects = [...docs.filter((d) => d.kind === 'Secret'), ...secretsFromEnv(docs, env), ...docs.filter((d) => d.kind !== 'Secret')].map(markApplied);
  await ensureNamespaces(api, objects);
  await applyAll(api, objects);
  const agents = docs.filter((d) => d.kind === 'Agent');
  if (needsSandbox(docs)) {
    for (const ns of new Set(agents.map((d) => d.metadata!.namespace!))) await prepareSandboxNamespace(api, ns, opts.sandboxServiceAccount ?? 'hermes-sandbox');
  }
  const pruned = await pruneDevObjects(kc, new Set(objects.map(objectKey)));
  return { agents: agents.map((d) => `${d.metadata!.namespace}/${d.metadata!.name}`), pruned };
}

/** Applies the manifests and runs the operator in this process (no leader election). */
export async function startDevOperator(opts: { kc: KubeConfig; db: Db; log: Logger; dir: string; env: Readonly<Record<string, string>>; gatewayUrl: string; sandboxServiceAccount: string; model?: string | undefined }): Promise<DevManifestResult & { operator: OperatorHandle }> {
  const applied = await applyDevManifests(opts.kc, opts.dir, opts.env, { sandboxServiceAccount: opts.sandboxServiceAccount, model: opts.model });
  const operator = await startOperator({ kc: opts.kc, db: opts.db, log: opts.log, gatewayUrl: opts.gatewayUrl, leaderElection: false, secretEnv: opts.env });
  return { ...applied, operator };
}
