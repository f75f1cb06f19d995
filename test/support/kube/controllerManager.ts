// A real kube-controller-manager running only its garbage collector — what deletes an object's
// dependents (ownerReferences) once the owner is gone, e.g. a SandboxClaim's Sandbox and the
// Sandbox's Pod and PVCs — and the PVC protection controller, which removes the
// `kubernetes.io/pvc-protection` finalizer (added by the apiserver's admission) once no Pod uses
// the claim, so a deleted PVC really goes. Nothing else of the controller-manager runs (no
// namespace, ServiceAccount, ReplicaSet… controllers): tests keep the control plane they know.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlane } from './controlPlane.js';
import { startLogged, waitReady } from './process.js';
import { freePort } from '../ports.js';

/** Options for {@link startGarbageCollector}. */
export interface GarbageCollectorOptions {
  /** How long it gets to sync its resource monitors. @defaultValue 60_000 */
  startTimeoutMs?: number;
  /**
   * Further controllers of kube-controller-manager to run (e.g. `serviceaccount-controller`,
   * which gives every namespace its `default` ServiceAccount, and `namespace-controller`, which
   * empties a deleted namespace): the dev plane runs them, tests keep the plane they know.
   * @defaultValue []
   */
  extraControllers?: string[];
}

/** A running garbage collector (kube-controller-manager `--controllers=garbagecollector,persistentvolumeclaim-protection-controller`). */
export interface GarbageCollector {
  logFile: string;
  tail(lines?: number): string;
  stop(): Promise<void>;
}

// klog's line once every informer of the collector's graph has synced.
const SYNCED = /all resource monitors have synced/i;

/**
 * Starts kube-controller-manager against `cp` as the admin with only the garbage collector and
 * PVC protection, no leader election and no serving port; resolves once its monitors have synced. It
 * rediscovers resources every 30 s, so install CRDs first (as
 * `startAgentSandboxController` does) for their objects to be collected at once.
 */
export async function startGarbageCollector(cp: Pick<ControlPlane, 'dir' | 'adminKubeconfig' | 'binaries'>, opts: GarbageCollectorOptions = {}): Promise<GarbageCollector> {
  const logFile = join(cp.dir, `kube-controller-manager-${await freePort()}.log`);
  const proc = startLogged('kube-controller-manager', cp.binaries.kubeControllerManager, [
    `--kubeconfig=${cp.adminKubeconfig}`, `--controllers=${['garbagecollector', 'persistentvolumeclaim-protection-controller', ...(opts.extraControllers ?? [])].join(',')}`, '--leader-elect=false', '--secure-port=0',
  ], logFile);
  await waitReady(proc, () => Promise.resolve(SYNCED.test(readFileSync(logFile, 'utf8'))), opts.startTimeoutMs ?? 60_000);
  return { logFile, tail: (lines) => proc.tail(lines), stop: () => proc.stop() };
}
