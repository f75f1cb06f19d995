// A container's environment as a kubelet builds it: `value`s, and `valueFrom` a Secret key, a
// ConfigMap key or a field of the Pod (name, namespace, uid, ServiceAccount, node, IPs), plus
// `envFrom` Secrets and ConfigMaps. A missing non-optional reference is the kubelet's
// CreateContainerConfigError (here: the Pod fails to start with that reason).
import { CoreV1Api, type KubeConfig, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { PodSpecError } from './podVolumes.js';

const isNotFound = (err: unknown): boolean => typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 404;

type Source = { kind: 'Secret' | 'ConfigMap'; name: string };

/** Reads and caches the Secrets and ConfigMaps one container's env names. */
class Sources {
  private readonly cache = new Map<string, Promise<Record<string, string> | undefined>>();
  constructor(private readonly core: CoreV1Api, private readonly namespace: string) {}

  data(src: Source): Promise<Record<string, string> | undefined> {
    const id = `${src.kind}/${src.name}`;
    let hit = this.cache.get(id);
    if (!hit) {
      hit = this.read(src);
      this.cache.set(id, hit);
    }
    return hit;
  }

  private async read(src: Source): Promise<Record<string, string> | undefined> {
    try {
      if (src.kind === 'Secret') {
        const s = await this.core.readNamespacedSecret({ name: src.name, namespace: this.namespace });
        return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
      }
      const cm = await this.core.readNamespacedConfigMap({ name: src.name, namespace: this.namespace });
      return { ...cm.data };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

function fieldOf(pod: V1Pod, path: string): string {
  const fields: Record<string, string | undefined> = {
    'metadata.name': pod.metadata?.name,
    'metadata.namespace': pod.metadata?.namespace,
    'metadata.uid': pod.metadata?.uid,
    'spec.serviceAccountName': pod.spec?.serviceAccountName ?? 'default',
    'spec.nodeName': pod.spec?.nodeName,
    'status.podIP': '127.0.0.1',
    'status.hostIP': '127.0.0.1',
  };
  const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (label) return (label[1] === 'labels' ? pod.metadata?.labels : pod.metadata?.annotations)?.[label[2]!] ?? '';
  if (!(path in fields)) throw new PodSpecError('CreateContainerConfigError', `the test kubelet does not support fieldRef ${path}`);
  return fields[path] ?? '';
}

async function keyOf(sources: Sources, src: Source, key: string, optional: boolean | undefined): Promise<string | undefined> {
  const data = await sources.data(src);
  if (data === undefined) {
    if (optional) return undefined;
    throw new PodSpecError('CreateContainerConfigError', `${src.kind.toLowerCase()} "${src.name}" not found`);
  }
  if (!Object.hasOwn(data, key)) {
    if (optional) return undefined;
    throw new PodSpecError('CreateContainerConfigError', `couldn't find key ${key} in ${src.kind} ${src.name}`);
  }
  return data[key];
}

/** The environment of `container` in `pod`, resolved against the apiserver as the kubelet starts it. */
export async function containerEnv(kc: KubeConfig, pod: V1Pod, container: V1Container): Promise<Record<string, string>> {
  const sources = new Sources(kc.makeApiClient(CoreV1Api), pod.metadata?.namespace ?? 'default');
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const src: Source | undefined = from.secretRef ? { kind: 'Secret', name: from.secretRef.name ?? '' }
      : from.configMapRef ? { kind: 'ConfigMap', name: from.configMapRef.name ?? '' } : undefined;
    if (!src) continue;
    const data = await sources.data(src);
    if (data === undefined) {
      if (from.secretRef?.optional || from.configMapRef?.optional) continue;
      throw new PodSpecError('CreateContainerConfigError', `${src.kind.toLowerCase()} "${src.name}" not found`);
    }
    for (const [k, v] of Object.entries(data)) env[`${from.prefix ?? ''}${k}`] = v;
  }
  for (const e of container.env ?? []) {
    const ref = e.valueFrom;
    let value: string | undefined;
    if (!ref) value = e.value ?? '';
    else if (ref.secretKeyRef) value = await keyOf(sources, { kind: 'Secret', name: ref.secretKeyRef.name ?? '' }, ref.secretKeyRef.key, ref.secretKeyRef.optional);
    else if (ref.configMapKeyRef) value = await keyOf(sources, { kind: 'ConfigMap', name: ref.configMapKeyRef.name ?? '' }, ref.configMapKeyRef.key, ref.configMapKeyRef.optional);
    else if (ref.fieldRef) value = fieldOf(pod, ref.fieldRef.fieldPath);
    else throw new PodSpecError('CreateContainerConfigError', `the test kubelet does not support env ${e.name}'s valueFrom ${Object.keys(ref).join(', ')}`);
    // $(VAR) references to variables defined earlier, as the kubelet expands them.
    if (value !== undefined) env[e.name] = value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name: string) => env[name] ?? m);
  }
  return env;
}
