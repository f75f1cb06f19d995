// Kubernetes-style conditions: lastTransitionTime moves only when status changes, so re-setting
// an unchanged condition is a no-op and two reconciles of unchanged state write nothing.
import type { Condition } from '../api/common.js';

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/** Returns a new list with `c` set (type is the key). */
export function setCondition(list: readonly Condition[] | undefined, c: ConditionInput, now: () => Date = () => new Date()): Condition[] {
  const out = [...(list ?? [])];
  const i = out.findIndex((x) => x.type === c.type);
  const prev = i >= 0 ? out[i] : undefined;
  const lastTransitionTime = prev && prev.status === c.status ? prev.lastTransitionTime : now().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const next: Condition = { ...c, lastTransitionTime };
  if (i >= 0) out[i] = next;
  else out.push(next);
  return out;
}

export function findCondition(list: readonly Condition[] | undefined, type: string): Condition | undefined {
  return list?.find((c) => c.type === type);
}

/** Conditions of `types` all `Unknown` (what a controller writes before its first real work). */
export function unknownConditions(types: readonly string[], generation: number | undefined, now?: () => Date): Condition[] {
  let list: Condition[] = [];
  for (const type of types) {
    list = setCondition(list, { type, status: 'Unknown', reason: 'Reconciling', message: 'The controller has not finished its first reconcile yet.', ...(generation !== undefined ? { observedGeneration: generation } : {}) }, now);
  }
  return list;
}
