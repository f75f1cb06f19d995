import type { V1NodeSelectorRequirement, V1Pod } from '@kubernetes/client-node';

function matches(req: V1NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? [];
  if (req.operator === 'In') return value !== undefined && values.includes(value);
  if (req.operator === 'NotIn') return value === undefined || !values.includes(value);
  if (req.operator === 'Exists') return value !== undefined;
  if (req.operator === 'DoesNotExist') return value === undefined;
  return false;
}

/**
 * The scheduler's node-affinity predicate, reduced to what a test Node has: a Pod whose required
 * node affinity names Nodes (`matchFields` on `metadata.name`, or `matchExpressions` on
 * `kubernetes.io/hostname`) is bound only by the kubelet of such a Node. Terms are ORed, the
 * requirements of a term ANDed; other keys are treated as unmet.
 */
export function affinityAllows(pod: V1Pod, nodeName: string): boolean {
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms?.length) return true;
  return terms.some((term) =>
    (term.matchFields ?? []).every((r) => r.key === 'metadata.name' && matches(r, nodeName))
    && (term.matchExpressions ?? []).every((r) => r.key === 'kubernetes.io/hostname' && matches(r, nodeName)));
}
