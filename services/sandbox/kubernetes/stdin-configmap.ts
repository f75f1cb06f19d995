// A call's stdin travels as an immutable ConfigMap mounted read-only into the Pod (see
// pod-spec.ts: the wrapper shell reads it as the command's standard input). Chosen over an env
// variable (Linux caps one at 128 KiB) and an init container (one more container start per call):
// up to 1 MiB, any bytes of UTF-8 text, no size left in the Pod spec. Created before the Pod (a
// kubelet waits for a missing ConfigMap), owned by the Pod once it exists (the garbage collector
// removes it if the worker dies), deleted when the call ends.
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { agentKey, sessionKey } from '../../core/index.js';
import type { SandboxSession } from '../types.js';
import { labelValue } from './names.js';
import { STDIN_KEY } from './pod-spec.js';

export async function createStdin(core: CoreV1Api, namespace: string, name: string, session: SandboxSession, stdin: string): Promise<void> {
  await core.createNamespacedConfigMap({ namespace, body: {
    metadata: { name, labels: { [agentKey]: labelValue(session.agent), [sessionKey]: labelValue(session.sessionId), 'app.kubernetes.io/managed-by': 'hermes' } },
    immutable: true,
    data: { [STDIN_KEY]: stdin },
  } });
}

/** Makes the Pod the ConfigMap's owner. Best effort: the call deletes it anyway. */
export async function ownStdin(core: CoreV1Api, namespace: string, name: string, pod: V1Pod): Promise<void> {
  await core.patchNamespacedConfigMap({ name, namespace, body: { metadata: { ownerReferences: [{
    apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '', blockOwnerDeletion: false,
  }] } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)).catch(() => undefined);
}

export async function deleteStdin(core: CoreV1Api, namespace: string, name: string): Promise<void> {
  await core.deleteNamespacedConfigMap({ name, namespace }).catch(() => undefined);
}
