import { randomUUID } from 'node:crypto';
import { CoreV1Api, type KubeConfig, type V1NodeStatus } from '@kubernetes/client-node';

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

/** Creates the Node and posts a Ready status whose kubelet endpoint is 127.0.0.1:`port`. */
export async function registerNode(kc: KubeConfig, name: string, port: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNode({
    body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } } },
  });
  const node = await core.readNode({ name });
  await core.replaceNodeStatus({ name, body: { ...node, status: nodeStatus(name, port) } });
}

/** Deletes the Node, ignoring failures (the control plane may already be gone). */
export async function deleteNode(kc: KubeConfig, name: string): Promise<void> {
  await kc.makeApiClient(CoreV1Api).deleteNode({ name }).catch(() => undefined);
}
