import { randomUUID } from 'node:crypto';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1NodeStatus } from '@kubernetes/client-node';

/**
 * Node features the test kubelet declares in `status.declaredFeatures`. With
 * ExtendWebSocketsToKubelet the apiserver proxies WebSocket `pods/exec` to the kubelet as is
 * instead of translating it to SPDY, which the test kubelet does not speak.
 */
export const DECLARED_FEATURES = ['ExtendWebSocketsToKubelet'];

/** Version the fake Node reports as its kubelet's. */
export const TEST_KUBELET_VERSION = 'v1.37.2';

function nodeStatus(name: string, port: number): V1NodeStatus {
  const now = new Date();
  const resources = { cpu: '4', memory: '8Gi', pods: '110', 'ephemeral-storage': '20Gi' };
  return {
    capacity: resources,
    allocatable: resources,
    addresses: [{ type: 'InternalIP', address: '127.0.0.1' }, { type: 'Hostname', address: name }],
    daemonEndpoints: { kubeletEndpoint: { Port: port } },
    conditions: [{
      type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test kubelet is posting ready status',
      lastHeartbeatTime: now, lastTransitionTime: now,
    }],
    nodeInfo: {
      machineID: name, systemUUID: randomUUID(), bootID: randomUUID(), kernelVersion: 'test', osImage: 'test',
      containerRuntimeVersion: 'bwrap://0.8', kubeletVersion: TEST_KUBELET_VERSION, kubeProxyVersion: '',
      operatingSystem: 'linux', architecture: 'amd64',
    },
  };
}

/**
 * Creates the Node (or takes over the one an earlier run of the same kubelet left, as a real
 * kubelet re-registers after a restart) and posts a Ready status whose kubelet endpoint is
 * 127.0.0.1:`port`.
 */
export async function registerNode(kc: KubeConfig, name: string, port: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNode({
    body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } } },
  }).catch((err: unknown) => {
    if ((err as { code?: unknown }).code !== 409) throw err;
  });
  // A merge patch, not replaceNodeStatus: client-node 1.x's V1NodeStatus has no
  // declaredFeatures and its serializer drops fields it does not know.
  await core.patchNodeStatus({ name, body: { status: { ...nodeStatus(name, port), declaredFeatures: DECLARED_FEATURES } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
}

/** Deletes the Node, ignoring failures (the control plane may already be gone). */
export async function deleteNode(kc: KubeConfig, name: string): Promise<void> {
  await kc.makeApiClient(CoreV1Api).deleteNode({ name }).catch(() => undefined);
}
