// The ServiceAccount volume a kubelet projects into a Pod (kube-api-access-*): a bound token from
// the TokenRequest API for the Pod's ServiceAccount, the cluster CA and the namespace, at
// /var/run/secrets/kubernetes.io/serviceaccount, with KUBERNETES_SERVICE_HOST/PORT naming the
// apiserver — so a Pod's in-cluster client (client-node's loadFromDefault) talks to the test plane
// as that ServiceAccount, under the real authorizer.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { Bind } from './podVolumes.js';
import { PodSpecError } from './podVolumes.js';

export const SERVICE_ACCOUNT_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Where the apiserver is and whom to trust: the plane's server URL and CA file. */
export interface ApiserverAccess {
  server: string;
  caFile: string;
}

/**
 * Mints the Pod's token (bound to the Pod, one hour) and writes the volume under `podDir`;
 * undefined when the Pod opts out (`automountServiceAccountToken: false`).
 */
export async function serviceAccountVolume(kc: KubeConfig, pod: V1Pod, podDir: string, access: ApiserverAccess): Promise<{ bind: Bind; env: Record<string, string> } | undefined> {
  if (pod.spec?.automountServiceAccountToken === false) return undefined;
  const namespace = pod.metadata?.namespace ?? 'default';
  const name = pod.spec?.serviceAccountName ?? 'default';
  let token: string | undefined;
  try {
    const request = await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
      name, namespace,
      body: { spec: { audiences: [], expirationSeconds: 3600, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid } } },
    });
    token = request.status?.token;
  } catch (err) {
    throw new PodSpecError('CreateContainerConfigError', `cannot mint a token for ServiceAccount ${namespace}/${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!token) throw new PodSpecError('CreateContainerConfigError', `TokenRequest for ServiceAccount ${namespace}/${name} returned no token`);
  const dir = join(podDir, 'volumes', 'kube-api-access');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'token'), token);
  writeFileSync(join(dir, 'ca.crt'), readFileSync(access.caFile));
  writeFileSync(join(dir, 'namespace'), namespace);
  const url = new URL(access.server);
  return {
    bind: { source: dir, target: SERVICE_ACCOUNT_MOUNT, readOnly: true },
    env: { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port || '443' },
  };
}
