import type { V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';

/** How the sandboxed process of a pod's first container ended. */
export interface Termination {
  exitCode: number;
  startedAt: Date;
  finishedAt: Date;
  /** Pod-level reason, e.g. `DeadlineExceeded`. */
  podReason?: string;
  podMessage?: string;
  /** The container's own reason. @defaultValue `Completed` on exit 0, else `Error` */
  containerReason?: string;
  containerMessage?: string;
}

const LOOPBACK = '127.0.0.1';

function condition(type: string, status: boolean, now: Date, reason?: string): V1PodCondition {
  return { type, status: status ? 'True' : 'False', lastTransitionTime: now, ...(reason ? { reason } : {}) };
}

/** Replaces the kubelet-owned conditions, keeping others (PodScheduled comes from the binding). */
function withConditions(pod: V1Pod, ready: boolean, now: Date, reason?: string): V1PodCondition[] {
  const ours = ['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready'];
  const kept = (pod.status?.conditions ?? []).filter((c) => !ours.includes(c.type));
  return [
    ...kept,
    condition('PodReadyToStartContainers', true, now),
    condition('Initialized', true, now),
    condition('ContainersReady', ready, now, ready ? undefined : reason),
    condition('Ready', ready, now, ready ? undefined : reason),
  ];
}

function baseContainerStatus(pod: V1Pod, index: number, containerId: string): V1ContainerStatus {
  const container = pod.spec?.containers[index];
  return {
    name: container?.name ?? `container-${index}`,
    image: container?.image ?? '',
    imageID: '',
    containerID: containerId,
    ready: false,
    started: false,
    restartCount: 0,
  };
}

/** Only the first container runs; the others are reported as waiting, so nobody mistakes them for run. */
function otherContainers(pod: V1Pod): V1ContainerStatus[] {
  return (pod.spec?.containers ?? []).slice(1).map((_, i) => ({
    ...baseContainerStatus(pod, i + 1, ''),
    state: { waiting: { reason: 'NotRunByTestKubelet', message: 'The test kubelet runs only the first container' } },
  }));
}

function network(pod: V1Pod, now: Date): Partial<V1PodStatus> {
  return {
    hostIP: LOOPBACK, hostIPs: [{ ip: LOOPBACK }], podIP: LOOPBACK, podIPs: [{ ip: LOOPBACK }],
    startTime: pod.status?.startTime ?? now,
  };
}

/** Status of a pod whose first container has started; `ready` false while its readiness probe has not passed. */
export function runningStatus(pod: V1Pod, containerId: string, startedAt: Date, ready = true): V1PodStatus {
  const first: V1ContainerStatus = {
    ...baseContainerStatus(pod, 0, containerId), ready, started: true, state: { running: { startedAt } },
  };
  return {
    ...pod.status, ...network(pod, startedAt), phase: 'Running',
    conditions: withConditions(pod, ready, startedAt, 'ContainersNotReady'),
    containerStatuses: [first, ...otherContainers(pod)],
  };
}

/** Status of a pod whose first container has ended (Succeeded on exit 0, else Failed). */
export function terminatedStatus(pod: V1Pod, containerId: string, end: Termination): V1PodStatus {
  const ok = end.exitCode === 0 && !end.podReason;
  const first: V1ContainerStatus = {
    ...baseContainerStatus(pod, 0, containerId),
    state: {
      terminated: {
        exitCode: end.exitCode, reason: end.containerReason ?? (end.exitCode === 0 ? 'Completed' : 'Error'),
        ...(end.containerMessage ? { message: end.containerMessage } : {}), startedAt: end.startedAt, finishedAt: end.finishedAt, containerID: containerId,
      },
    },
  };
  return {
    ...pod.status, ...network(pod, end.startedAt), phase: ok ? 'Succeeded' : 'Failed',
    reason: end.podReason, message: end.podMessage,
    conditions: withConditions(pod, false, end.finishedAt, 'PodCompleted'),
    containerStatuses: [first, ...otherContainers(pod)],
  };
}

/** Status of a pod the test kubelet cannot run (no command, bad volume...). */
export function failedToStartStatus(pod: V1Pod, reason: string, message: string, now: Date): V1PodStatus {
  return {
    ...pod.status, ...network(pod, now), phase: 'Failed', reason, message,
    conditions: withConditions(pod, false, now, reason),
    containerStatuses: [{ ...baseContainerStatus(pod, 0, ''), state: { waiting: { reason, message } } }, ...otherContainers(pod)],
  };
}

/** Status of a pod whose image cannot be pulled: Pending, the container waiting in ErrImagePull (as a real kubelet). */
export function imagePullFailedStatus(pod: V1Pod, image: string, now: Date): V1PodStatus {
  const message = `Failed to pull image "${image}": not found (test kubelet: unpullable image)`;
  return {
    ...pod.status, ...network(pod, now), phase: 'Pending',
    conditions: withConditions(pod, false, now, 'ContainersNotReady'),
    containerStatuses: [{ ...baseContainerStatus(pod, 0, ''), state: { waiting: { reason: 'ErrImagePull', message } } }, ...otherContainers(pod)],
  };
}
