// The session's workspace: one ReadWriteOnce PVC per session, created on first use, labelled and
// annotated per services/core/sandbox-labels.ts (the operator's hygiene controller deletes it
// once idle past its TTL). Every call refreshes `last-used-at` (and the TTL, which the Profile may
// have changed) with one merge patch; the patch also answers which Node the volume was last used on.
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import {
  agentKey, componentLabel, lastUsedAtAnnotation, nodeAnnotation, sessionKey, ttlSecondsAnnotation, workspaceComponent,
} from '../../core/index.js';
import type { SandboxSession, WorkspaceSettings } from '../types.js';
import { apiCode } from './failures.js';
import { labelValue, workspacePvcName } from './names.js';

export interface Workspace {
  name: string;
  /** The Node the session's last sandbox Pod ran on (annotation), if any. */
  node?: string;
  /** True when the PVC is being deleted (expired): it cannot be used. */
  deleting: boolean;
}

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The PVC object created on first use. */
export function workspacePvc(session: SandboxSession, namespace: string, ws: WorkspaceSettings, storageClassName: string | undefined, now: Date): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: workspacePvcName(session.sessionId),
      namespace,
      labels: {
        [componentLabel]: workspaceComponent, [agentKey]: labelValue(session.agent), [sessionKey]: labelValue(session.sessionId),
        'app.kubernetes.io/managed-by': 'hermes',
      },
      annotations: {
        [agentKey]: session.agent, [sessionKey]: session.sessionId,
        [ttlSecondsAnnotation]: String(ws.ttlSeconds), [lastUsedAtAnnotation]: now.toISOString(),
      },
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: ws.size } },
      ...(storageClassName ? { storageClassName } : {}),
    },
  };
}

const workspaceOf = (pvc: V1PersistentVolumeClaim): Workspace => ({
  name: pvc.metadata?.name ?? '',
  ...(pvc.metadata?.annotations?.[nodeAnnotation] ? { node: pvc.metadata.annotations[nodeAnnotation] } : {}),
  deleting: !!pvc.metadata?.deletionTimestamp,
});

/** Refreshes `last-used-at` of the session's PVC, creating it when missing. */
export async function useWorkspace(core: CoreV1Api, session: SandboxSession, namespace: string, ws: WorkspaceSettings, storageClassName?: string): Promise<Workspace> {
  const name = workspacePvcName(session.sessionId);
  const touch = () => core.patchNamespacedPersistentVolumeClaim({
    name, namespace,
    body: { metadata: { annotations: { [lastUsedAtAnnotation]: new Date().toISOString(), [ttlSecondsAnnotation]: String(ws.ttlSeconds) } } },
  }, merge);
  try {
    return workspaceOf(await touch());
  } catch (err) {
    if (apiCode(err) !== 404) throw err;
  }
  try {
    return workspaceOf(await core.createNamespacedPersistentVolumeClaim({ namespace, body: workspacePvc(session, namespace, ws, storageClassName, new Date()) }));
  } catch (err) {
    if (apiCode(err) !== 409) throw err; // another call of the session created it first
    return workspaceOf(await touch());
  }
}

/** Records the Node the session's volume is now used on (later Pods are pinned there). Best effort. */
export async function recordNode(core: CoreV1Api, namespace: string, pvcName: string, node: string): Promise<void> {
  await core.patchNamespacedPersistentVolumeClaim({ name: pvcName, namespace, body: { metadata: { annotations: { [nodeAnnotation]: node } } } }, merge)
    .catch(() => undefined);
}

/** Refreshes `last-used-at` once the call is over (a long call must not leave an old stamp). Best effort. */
export async function touchWorkspace(core: CoreV1Api, namespace: string, pvcName: string): Promise<void> {
  await core.patchNamespacedPersistentVolumeClaim({ name: pvcName, namespace, body: { metadata: { annotations: { [lastUsedAtAnnotation]: new Date().toISOString() } } } }, merge)
    .catch(() => undefined);
}
