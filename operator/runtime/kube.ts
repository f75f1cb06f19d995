// Writes to our custom resources: status through the status subresource (merge patch) and the
// finalizer list guarded by resourceVersion, so a stale cache never overwrites a newer object.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { group, version } from '../api/common.js';

export interface ObjectKey { namespace: string; name: string }

export const finalizerName = 'hermes.dev/finalizer';

export class ResourceWriter {
  private readonly api: CustomObjectsApi;

  constructor(kc: KubeConfig) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  async patchStatus(plural: string, key: ObjectKey, status: Record<string, unknown>): Promise<void> {
    await this.api.patchNamespacedCustomObjectStatus({ group, version, plural, namespace: key.namespace, name: key.name, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  }

  /** Sets metadata.finalizers; fails with 409 when the object changed since `resourceVersion`. */
  async setFinalizers(plural: string, key: ObjectKey, finalizers: string[], resourceVersion: string | undefined): Promise<void> {
    await this.api.patchNamespacedCustomObject({ group, version, plural, namespace: key.namespace, name: key.name,
      body: { metadata: { finalizers, ...(resourceVersion ? { resourceVersion } : {}) } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  }

  async list(plural: string, namespace?: string): Promise<{ items: unknown[]; metadata?: { resourceVersion?: string } }> {
    return namespace
      ? this.api.listNamespacedCustomObject({ group, version, plural, namespace })
      : this.api.listClusterCustomObject({ group, version, plural });
  }
}

export const keyOf = (o: { metadata: { namespace?: string; name: string } }): string => `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;
export function parseKey(key: string): ObjectKey {
  const i = key.indexOf('/');
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
