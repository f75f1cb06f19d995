// `hermes dev --k8s` keeps the dev cluster equal to the manifest folder, as
// `kubectl apply --prune -l …` does: every object it applies carries {@link appliedByLabel}, and
// after an apply the labelled objects the folder no longer declares are deleted. Objects created
// by hand (kubectl, Helm) carry no such label and are never touched.
import { KubernetesObjectApi, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { whenServed } from './dev-k8s-crds.js';

/** Label `hermes dev --k8s` puts on what it applies (value `hermes-dev`). */
export const appliedByLabel = 'hermes.dev/applied-by';
export const appliedByValue = 'hermes-dev';

/** The kinds `hermes dev --k8s` applies, so the kinds it prunes. */
const prunable: readonly { apiVersion: string; kind: string }[] = [
  { apiVersion: 'hermes.dev/v1alpha1', kind: 'CronJob' },
  { apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent' },
  { apiVersion: 'hermes.dev/v1alpha1', kind: 'Skill' },
  { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile' },
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Secret' },
];

export const objectKey = (o: KubernetesObject): string => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** Returns `obj` with the applied-by label added (the manifest's own labels kept). */
export function markApplied<T extends KubernetesObject>(obj: T): T {
  return { ...obj, metadata: { ...obj.metadata, labels: { ...obj.metadata?.labels, [appliedByLabel]: appliedByValue } } };
}

/**
 * Deletes the objects an earlier `hermes dev --k8s` applied (any namespace) that are not in
 * `keep` (keys from {@link objectKey}). Returns what it deleted, as `Kind namespace/name`.
 */
export async function pruneDevObjects(kc: KubeConfig, keep: ReadonlySet<string>): Promise<string[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const deleted: string[] = [];
  for (const { apiVersion, kind } of prunable) {
    // Right after a CRD changed, its storage may still be (re)initializing (429).
    const list = await whenServed(() => api.list(apiVersion, kind, undefined, undefined, undefined, undefined, undefined, `${appliedByLabel}=${appliedByValue}`));
    for (const item of list.items) {
      const obj = { ...item, apiVersion, kind };
      if (keep.has(objectKey(obj))) continue;
      try {
        await api.delete(obj);
      } catch (err) {
        if ((err as { code?: number }).code !== 404) throw err;
      }
      deleted.push(`${kind} ${obj.metadata?.namespace}/${obj.metadata?.name}`);
    }
  }
  return deleted;
}
