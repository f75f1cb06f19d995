import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { containerEnv } from './podEnv.js';
import { podBinds, PodSpecError, type Bind } from './podVolumes.js';
import { startSandbox, type Sandbox, type SandboxSpec } from './sandbox.js';
import { serviceAccountVolume, type ApiserverAccess } from './serviceAccountToken.js';

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
  /** Stops its readiness probe (readiness.ts), if it has one. */
  stopProbe?: () => void;
}

/**
 * How the test kubelet runs a container image it cannot pull: as a local command. The install
 * test maps the chart's runtime image to `node <checkout>/bin/hermes.js`, so `helm install`
 * runs the operator, gateway and workers from the checkout.
 */
export interface ImageCommand {
  /** The image's entrypoint: the argv before the container's `args` (a container `command` replaces it, as in Kubernetes). */
  entrypoint: string[];
  /** Host folders bound read-only at the same path inside the sandbox (the checkout, its node_modules). */
  readOnlyPaths?: string[];
  /** Keep the host network, so the Pod reaches the test's Postgres, Redis and fake servers on loopback and serves on the host's ports. */
  hostNetwork?: boolean;
}

/** What {@link startPodProcess} may do beyond running a container's own command. */
export interface PodProcessOptions {
  /** Images run as local commands, by exact image reference. */
  images?: Record<string, ImageCommand>;
  /** Project the Pod's ServiceAccount token (unless it opts out), as a kubelet does; off: no token is mounted. */
  serviceAccountTokens?: ApiserverAccess;
}

function wantsNetwork(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[NETWORK_ANNOTATION] === 'host' || pod.metadata?.labels?.[NETWORK_ANNOTATION] === 'host';
}

/** Starts the pod's first container's command+args inside bubblewrap; throws PodSpecError for pods it cannot run. */
export async function startPodProcess(kc: KubeConfig, pod: V1Pod, stateDir: string, opts: PodProcessOptions = {}): Promise<PodProcess> {
  const container = pod.spec?.containers[0];
  const uid = pod.metadata?.uid ?? '';
  const image = container?.image !== undefined ? opts.images?.[container.image] : undefined;
  const argv = [...(container?.command ?? image?.entrypoint ?? []), ...(container?.args ?? [])];
  if (!container || argv.length === 0) {
    throw new PodSpecError('NoCommand', 'The test kubelet cannot run image entrypoints; set command (and args) on the first container, or map its image to a local command (KubeletOptions.images)');
  }
  const podDir = join(stateDir, 'pods', pod.metadata?.namespace ?? 'default', uid);
  mkdirSync(podDir, { recursive: true });
  const binds: Bind[] = [
    ...(image?.readOnlyPaths ?? []).map((path) => ({ source: path, target: path, readOnly: true })),
    ...await podBinds(kc, pod, stateDir),
  ];
  const env = await containerEnv(kc, pod, container);
  const token = opts.serviceAccountTokens ? await serviceAccountVolume(kc, pod, podDir, opts.serviceAccountTokens) : undefined;
  if (token) {
    binds.push(token.bind);
    Object.assign(env, token.env);
  }
  const logFile = join(podDir, `${container.name}.log`);
  writeFileSync(logFile, '');
  const spec: SandboxSpec = {
    argv, env, binds, logFile,
    hostname: (pod.metadata?.name ?? 'pod').slice(0, 63),
    workingDir: container.workingDir ?? '/',
    workdirSource: join(podDir, 'workdir'),
    network: image?.hostNetwork === true || wantsNetwork(pod),
  };
  const sandbox = startSandbox(spec);
  return {
    uid, containerName: container.name, containerId: `bwrap://${sandbox.pid}`, sandbox, spec,
    startedAt: new Date(), logFile, finished: false,
  };
}
