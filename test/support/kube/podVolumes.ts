import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Pod, type V1Volume } from '@kubernetes/client-node';

/** A host folder to bind at `target` inside the sandbox. */
export interface Bind {
  source: string;
  target: string;
  readOnly: boolean;
}

/** A pod the test kubelet cannot run as asked; becomes a Failed status, not a crash. */
export class PodSpecError extends Error {
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

function writeKeys(dir: string, data: Record<string, string | Buffer>): void {
  mkdirSync(dir, { recursive: true });
  for (const [key, value] of Object.entries(data)) writeFileSync(join(dir, key), value);
}

/**
 * Materialises a volume as a host folder: emptyDir per pod; a PVC stand-in per namespace and
 * claim (so two pods sharing a claim share files); configMap/secret keys written as files.
 * Returns undefined for kinds it does not model (the projected service-account token).
 */
async function volumeFolder(kc: KubeConfig, pod: V1Pod, volume: V1Volume, stateDir: string): Promise<string | undefined> {
  const ns = pod.metadata?.namespace ?? 'default';
  const podDir = join(stateDir, 'pods', ns, pod.metadata?.uid ?? 'unknown');
  if (volume.emptyDir) return join(podDir, 'volumes', volume.name);
  if (volume.persistentVolumeClaim) return join(stateDir, 'pvc', ns, volume.persistentVolumeClaim.claimName);
  const core = kc.makeApiClient(CoreV1Api);
  if (volume.configMap) {
    const cm = await core.readNamespacedConfigMap({ name: volume.configMap.name ?? '', namespace: ns });
    const dir = join(podDir, 'volumes', volume.name);
    writeKeys(dir, { ...cm.data, ...Object.fromEntries(Object.entries(cm.binaryData ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])) });
    return dir;
  }
  if (volume.secret) {
    const secret = await core.readNamespacedSecret({ name: volume.secret.secretName ?? '', namespace: ns });
    const dir = join(podDir, 'volumes', volume.name);
    writeKeys(dir, Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])));
    return dir;
  }
  return undefined;
}

/** Host folders for the first container's volumeMounts, shallowest target first. */
export async function podBinds(kc: KubeConfig, pod: V1Pod, stateDir: string): Promise<Bind[]> {
  const container = pod.spec?.containers[0];
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  const binds: Bind[] = [];
  for (const mount of container?.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (!volume) throw new PodSpecError('VolumeNotFound', `volumeMount ${mount.name} names no volume`);
    const folder = await volumeFolder(kc, pod, volume, stateDir);
    if (!folder) continue;
    const source = mount.subPath ? join(folder, mount.subPath) : folder;
    mkdirSync(source, { recursive: true });
    binds.push({ source, target: mount.mountPath, readOnly: mount.readOnly === true || !!volume.configMap || !!volume.secret });
  }
  return binds.sort((a, b) => a.target.split('/').length - b.target.split('/').length);
}
