import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { podBinds, PodSpecError } from './podVolumes.js';
import { startSandbox, type Sandbox, type SandboxSpec } from './sandbox.js';

/**
 * Pods carrying this annotation (or label) with value `host` keep the host network;
 * all others run with `--unshare-net` (loopback only).
 */
export const NETWORK_ANNOTATION = 'test-kubelet.hermes.dev/network';

/** The first container of a pod, running in a sandbox. */
export interface PodProcess {
  uid: string;
  containerName: string;
  containerId: string;
  sandbox: Sandbox;
  /** How it was started (env, working dir), so exec can run commands the same way. */
  spec: SandboxSpec;
  startedAt: Date;
  logFile: string;
  /** Why the kubelet killed it, if it did. */
  stopReason?: 'deleted' | 'deadline' | 'shutdown';
  finished: boolean;
  deadline?: NodeJS.Timeout;
}

function wantsNetwork(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[NETWORK_ANNOTATION] === 'host' || pod.metadata?.labels?.[NETWORK_ANNOTATION] === 'host';
}

/** Starts the pod's first container's command+args inside bubblewrap; throws PodSpecError for pods it cannot run. */
export async function startPodProcess(kc: KubeConfig, pod: V1Pod, stateDir: string): Promise<PodProcess> {
  const container = pod.spec?.containers[0];
  const uid = pod.metadata?.uid ?? '';
  const argv = [...(container?.command ?? []), ...(container?.args ?? [])];
  if (!container || argv.length === 0) {
    throw new PodSpecError('NoCommand', 'The test kubelet cannot run image entrypoints; set command (and args) on the first container');
  }
  const binds = await podBinds(kc, pod, stateDir);
  const env = Object.fromEntries((container.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value ?? '']));
  const podDir = join(stateDir, 'pods', pod.metadata?.namespace ?? 'default', uid);
  mkdirSync(podDir, { recursive: true });
  const logFile = join(podDir, `${container.name}.log`);
  writeFileSync(logFile, '');
  const spec: SandboxSpec = {
    argv, env, binds, logFile,
    hostname: (pod.metadata?.name ?? 'pod').slice(0, 63),
    workingDir: container.workingDir ?? '/',
    workdirSource: join(podDir, 'workdir'),
    network: wantsNetwork(pod),
  };
  const sandbox = startSandbox(spec);
  return {
    uid, containerName: container.name, containerId: `bwrap://${sandbox.pid}`, sandbox, spec,
    startedAt: new Date(), logFile, finished: false,
  };
}
