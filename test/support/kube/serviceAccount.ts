import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig, writeKubeconfig } from './kubeconfig.js';

/** A kubeconfig file authenticating as a ServiceAccount, and the same loaded for client-node. */
export interface MintedKubeconfig {
  path: string;
  kubeConfig: KubeConfig;
  /** `system:serviceaccount:<namespace>:<name>` */
  username: string;
}

/** Where and for whom to mint. */
export interface MintTarget {
  namespace: string;
  name: string;
  server: string;
  caFile: string;
  /** Folder the kubeconfig is written to. */
  dir: string;
  /** @defaultValue 3600 */
  expirationSeconds?: number;
}

function isConflict(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 409;
}

/**
 * Creates the ServiceAccount if absent, asks the TokenRequest API for a bound token and writes a
 * kubeconfig using it, so tests can check least-privilege RBAC with the real authorizer.
 */
export async function mintServiceAccountKubeconfig(admin: KubeConfig, target: MintTarget): Promise<MintedKubeconfig> {
  const core = admin.makeApiClient(CoreV1Api);
  const { namespace, name } = target;
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  const request = await core.createNamespacedServiceAccountToken({
    name, namespace, body: { spec: { audiences: [], expirationSeconds: target.expirationSeconds ?? 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`TokenRequest for ServiceAccount ${namespace}/${name} returned no token`);
  const username = `system:serviceaccount:${namespace}:${name}`;
  const path = writeKubeconfig(join(target.dir, `sa-${namespace}-${name}.kubeconfig`), target.server, target.caFile, username,
    { kind: 'token', token });
  return { path, kubeConfig: loadKubeConfig(path), username };
}
