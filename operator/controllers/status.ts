// The shared start of every reconcile: finalizer first, conditions Unknown before real work,
// and a status write only when the computed status differs from the stored one.
import type { Condition } from '../api/common.js';
import { setCondition, unknownConditions, type ConditionInput } from '../runtime/conditions.js';
import { finalizerName, keyOf } from '../runtime/kube.js';
import { sameJson, type OperatorContext, type RawObject } from './context.js';

/** What a reconcile decided: conditions and extra status fields. */
export interface StatusDraft {
  conditions: ConditionInput[];
  fields?: Record<string, unknown>;
  /** Set observedGeneration (only when the spec was applied). */
  applied: boolean;
}

/**
 * Prepares `obj` for work. Returns false when it wrote something (the finalizer or the Unknown
 * conditions): the watch event of that write brings the key back, so the next reconcile starts
 * from what the apiserver stored.
 */
export async function prepare(ctx: OperatorContext, plural: string, obj: RawObject, conditionTypes: readonly string[], finalizer = true): Promise<boolean> {
  const key = { namespace: obj.metadata.namespace, name: obj.metadata.name };
  const finalizers = obj.metadata.finalizers ?? [];
  if (finalizer && !finalizers.includes(finalizerName)) {
    await ctx.writer.setFinalizers(plural, key, [...finalizers, finalizerName], obj.metadata.resourceVersion);
    ctx.log.info({ [obj.kind.toLowerCase()]: keyOf(obj) }, `Added finalizer to ${obj.kind}`);
    return false;
  }
  if (!obj.status?.conditions?.length) {
    await ctx.writer.patchStatus(plural, key, { conditions: unknownConditions(conditionTypes, obj.metadata.generation) });
    return false;
  }
  return true;
}

/** Writes the drafted status if it differs from the stored one; returns whether it wrote. */
export async function writeStatus(ctx: OperatorContext, plural: string, obj: RawObject, draft: StatusDraft): Promise<boolean> {
  const gen = obj.metadata.generation;
  let conditions: Condition[] = obj.status?.conditions ?? [];
  for (const c of draft.conditions) conditions = setCondition(conditions, { ...c, ...(gen !== undefined ? { observedGeneration: gen } : {}) });
  const next: Record<string, unknown> = { ...(obj.status ?? {}), ...draft.fields, conditions };
  if (draft.applied && gen !== undefined) next.observedGeneration = gen;
  if (sameJson(next, obj.status)) return false;
  // Merge patch: fields the draft dropped must be sent as null to be removed.
  const patch: Record<string, unknown> = { ...next };
  for (const k of Object.keys(obj.status ?? {})) if (!(k in next) || next[k] === undefined) patch[k] = null;
  await ctx.writer.patchStatus(plural, { namespace: obj.metadata.namespace, name: obj.metadata.name }, patch);
  return true;
}

/** Removes our finalizer (last step of deletion). */
export async function releaseFinalizer(ctx: OperatorContext, plural: string, obj: RawObject): Promise<void> {
  const finalizers = obj.metadata.finalizers ?? [];
  if (!finalizers.includes(finalizerName)) return;
  await ctx.writer.setFinalizers(plural, { namespace: obj.metadata.namespace, name: obj.metadata.name },
    finalizers.filter((f) => f !== finalizerName), obj.metadata.resourceVersion);
  ctx.events.forget(obj.metadata.uid);
}

export const zodMessage = (issues: { path: PropertyKey[]; message: string }[]): string =>
  issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; ');
