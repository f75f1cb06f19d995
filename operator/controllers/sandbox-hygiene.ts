// Sandbox hygiene: the kubernetes sandbox backend creates one ephemeral Pod per terminal tool call
// and deletes it after the call; a worker that dies mid-call leaves it behind. This controller
// deletes sandbox Pods whose turn is over (admission terminal, unknown or gone), finished or
// unannotated strays after a grace, and workspace PVCs idle past their TTL that no live sandbox
// Pod mounts. Level-based: every Pod and PVC is looked at again on each resync (the turn state
// lives in Postgres, which is not watched); a Pod of a queued or started turn is never deleted.
import { CoreV1Api, type V1DeleteOptions, type V1PersistentVolumeClaim, type V1Pod } from '@kubernetes/client-node';
import type { Db } from '../../services/core/index.js';
import { keyOf, parseKey } from '../runtime/kube.js';
import type { ReconcileResult } from '../runtime/controller.js';
import type { OperatorContext } from './context.js';
import { admissionIdOf, claimsOf, isLive, sandboxPodVerdict, workspaceVerdict, type ResolvedHygieneOptions, type TurnState, type Verdict } from './sandbox-policy.js';

/** The state of admission `id`, or `missing` when there is no such row. Throws when Postgres is unreachable (the Pod is then kept and retried). */
export async function turnState(db: Db, id: string): Promise<TurnState> {
  const { rows } = await db.pool.query<{ state: TurnState }>(`SELECT state FROM admissions WHERE id = $1`, [id]);
  return rows[0]?.state ?? 'missing';
}

/** Keys of the workspace PVCs a Pod mounts (to look at them again when the Pod finishes or goes). */
export const mountedClaimKeys = (pod: V1Pod): string[] =>
  claimsOf(pod).map((claim) => `${pod.metadata?.namespace ?? 'default'}/${claim}`);

const objectKey = (o: V1Pod | V1PersistentVolumeClaim) => keyOf({ metadata: { namespace: o.metadata?.namespace, name: o.metadata?.name ?? '' } });

/** A keep verdict with something due before the next resync is looked at again then; the resync covers the rest. */
function requeue(v: Verdict, o: ResolvedHygieneOptions): ReconcileResult | undefined {
  return v.action === 'keep' && v.recheckAfterMs !== undefined && v.recheckAfterMs < o.resyncMs ? { requeueAfterMs: v.recheckAfterMs + 50 } : undefined;
}

/**
 * Deletes with preconditions (a recreated object of the same name, or a PVC touched since we
 * looked, is not deleted: the 409 retries the reconcile with a fresh look). False when already gone.
 */
async function deleteGuarded(del: (body: V1DeleteOptions) => Promise<unknown>, preconditions: V1DeleteOptions['preconditions']): Promise<boolean> {
  try {
    await del({ preconditions });
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return false;
    throw err;
  }
}

export async function reconcileSandboxPod(ctx: OperatorContext, o: ResolvedHygieneOptions, key: string): Promise<ReconcileResult | void> {
  const { namespace, name } = parseKey(key);
  const pod = ctx.caches.sandbox?.pods.get(name, namespace);
  if (!pod || pod.metadata?.deletionTimestamp) return;
  const id = admissionIdOf(pod);
  const turn = id ? await turnState(ctx.db, id) : undefined;
  const v = sandboxPodVerdict(pod, turn, Date.now(), o);
  if (v.action === 'keep') return requeue(v, o);
  const uid = pod.metadata?.uid;
  const core = ctx.kc.makeApiClient(CoreV1Api);
  if (!(await deleteGuarded((body) => core.deleteNamespacedPod({ namespace, name, body }), { uid }))) return;
  ctx.log.info({ pod: key, admission: id, turn: turn ?? null, reason: v.reason }, 'Deleted sandbox Pod');
  await ctx.events.emit({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, uid } }, 'Normal', v.reason, v.message);
  ctx.events.forget(uid);
}

export async function reconcileWorkspace(ctx: OperatorContext, o: ResolvedHygieneOptions, key: string): Promise<ReconcileResult | void> {
  const { namespace, name } = parseKey(key);
  const sandbox = ctx.caches.sandbox;
  const pvc = sandbox?.workspaces.get(name, namespace);
  if (!sandbox || !pvc || pvc.metadata?.deletionTimestamp) return;
  const mountedBy = sandbox.pods.list(namespace).filter((p) => isLive(p) && claimsOf(p).includes(name)).map(objectKey);
  const v = workspaceVerdict(pvc, mountedBy, Date.now(), o);
  if (v.action === 'keep') return requeue(v, o);
  const { uid, resourceVersion } = pvc.metadata ?? {};
  const core = ctx.kc.makeApiClient(CoreV1Api);
  if (!(await deleteGuarded((body) => core.deleteNamespacedPersistentVolumeClaim({ namespace, name, body }), { uid, resourceVersion }))) return;
  ctx.log.info({ pvc: key, reason: v.reason }, 'Deleted workspace PVC');
  await ctx.events.emit({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace, uid } }, 'Normal', v.reason, v.message);
  ctx.events.forget(uid);
}
