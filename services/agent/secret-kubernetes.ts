// Secrets read through the Kubernetes API (HERMES_SECRETS_SOURCE=kubernetes): one `get` of the
// named Secret in the Agent's own namespace — never a list, never another namespace — kept in a
// small cache for a few seconds so a busy worker does not read it for every turn. The worker's
// ServiceAccount needs `get` on Secrets there (charts/hermes/templates/worker-rbac.yaml).
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { SecretAccessError, validSecretPath, type ResolveOptions, type SecretStore } from './secrets.js';

export interface KubernetesSecretOptions {
  /** How long a read Secret (or its absence) is reused. @defaultValue 30 000 ms */
  ttlMs?: number;
  /** Most Secrets kept; the least recently read go first. @defaultValue 1 000 */
  maxEntries?: number;
  now?: () => number;
}

type Data = Readonly<Record<string, string>> | undefined;

function decode(s: V1Secret): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  // stringData is write-only in the API; kept for servers that echo it.
  for (const [k, v] of Object.entries(s.stringData ?? {})) out[k] = v;
  return out;
}

export class KubernetesSecretStore implements SecretStore {
  readonly source = 'Kubernetes Secrets';
  private readonly api: CoreV1Api;
  private readonly cache = new Map<string, { at: number; data: Promise<Data> }>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(kc: KubeConfig, opts: KubernetesSecretOptions = {}) {
    this.api = kc.makeApiClient(CoreV1Api);
    this.ttlMs = opts.ttlMs ?? 30_000;
    this.maxEntries = opts.maxEntries ?? 1_000;
    this.now = opts.now ?? Date.now;
  }

  async read(namespace: string, name: string, key: string, opts: ResolveOptions = {}): Promise<string | undefined> {
    if (!validSecretPath(namespace, name, key)) return undefined;
    const data = await this.secret(namespace, name, opts.fresh ?? false);
    return data && Object.hasOwn(data, key) ? data[key] : undefined;
  }

  private secret(namespace: string, name: string, fresh: boolean): Promise<Data> {
    const id = `${namespace}/${name}`;
    const hit = this.cache.get(id);
    if (hit && !fresh && this.now() - hit.at < this.ttlMs) return hit.data;
    const entry = { at: this.now(), data: this.fetch(namespace, name) };
    this.cache.delete(id); // re-inserted last: the Map's order is the eviction order
    this.cache.set(id, entry);
    while (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    // A failed read is not remembered: the next turn asks again.
    entry.data.catch(() => { if (this.cache.get(id) === entry) this.cache.delete(id); });
    return entry.data;
  }

  private async fetch(namespace: string, name: string): Promise<Data> {
    try {
      return decode(await this.api.readNamespacedSecret({ name, namespace }));
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === 404) return undefined;
      if (code === 401 || code === 403) {
        throw new SecretAccessError(`The worker may not read Secret "${name}" in namespace ${namespace} (${code}): bind its ServiceAccount to the hermes-worker ClusterRole in that namespace (charts/hermes/templates/worker-rbac.yaml).`);
      }
      throw new SecretAccessError(`Reading Secret "${name}" in namespace ${namespace} from the Kubernetes API failed: ${code ? `HTTP ${code}` : (err as Error).message}`);
    }
  }
}
