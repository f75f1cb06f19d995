// The sandbox Pod of one call, as a pure function of the request and the settings: the command
// as the container's command, the session workspace at /workspace, the restricted security
// context, no token, no Secret, no inherited environment. Unit-tested field by field
// (test/unit/sandbox/kubernetes-pod-spec.test.ts); the integration test checks the stored Pod.
import type { V1EnvVar, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import {
  admissionIdAnnotation, agentKey, componentLabel, sandboxComponent, sessionKey,
} from '../../core/index.js';
import { WORKSPACE_PATH, type ExecRequest } from '../types.js';
import { labelValue } from './names.js';
import type { KubernetesSandboxSettings } from './settings.js';

export const CONTAINER_NAME = 'sandbox';
/** Where a call's stdin is mounted (a ConfigMap volume; see stdinCommand). */
export const STDIN_DIR = '/run/hermes/stdin';
export const STDIN_KEY = 'stdin';
const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface SandboxPodInput {
  name: string;
  namespace: string;
  req: ExecRequest;
  pvcName: string;
  settings: KubernetesSandboxSettings;
  /** The Node holding the session's RWO volume: the Pod may run only there. */
  pinnedNode?: string;
  /** The ConfigMap holding the call's stdin, when it has one. */
  stdinConfigMap?: string;
}

/**
 * The container's argv: `/bin/sh -c <command>`. With stdin, a wrapper shell opens the mounted
 * stdin file and execs the same `/bin/sh -c <command>` on it; the command text is passed as an
 * argument (`$1`), never spliced into the wrapper.
 */
export function containerCommand(command: string, withStdin: boolean): string[] {
  return withStdin
    ? ['/bin/sh', '-c', `exec /bin/sh -c "$1" < ${STDIN_DIR}/${STDIN_KEY}`, 'sh', command]
    : ['/bin/sh', '-c', command];
}

/** The container's whole environment: PATH, HOME, LANG, TMPDIR, then the request's own variables. */
export function containerEnv(extra: Record<string, string> = {}): V1EnvVar[] {
  const base: Record<string, string> = { PATH, HOME: WORKSPACE_PATH, LANG: 'C.UTF-8', TMPDIR: '/tmp' };
  return Object.entries({ ...base, ...extra }).map(([name, value]) => ({ name, value }));
}

/** Seconds the kubelet lets the Pod live: the command's timeout plus the start allowance (image pull), rounded up. */
export function deadlineSeconds(timeoutMs: number, startTimeoutMs: number): number {
  return Math.ceil(timeoutMs / 1_000) + Math.ceil(startTimeoutMs / 1_000);
}

function volumes(input: SandboxPodInput): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const volumes: V1Volume[] = [
    { name: 'workspace', persistentVolumeClaim: { claimName: input.pvcName } },
    { name: 'tmp', emptyDir: { sizeLimit: input.settings.tmpSize } },
  ];
  const mounts: V1VolumeMount[] = [
    { name: 'workspace', mountPath: WORKSPACE_PATH },
    { name: 'tmp', mountPath: '/tmp' },
  ];
  if (input.stdinConfigMap) {
    volumes.push({ name: 'stdin', configMap: { name: input.stdinConfigMap, defaultMode: 0o444 } });
    mounts.push({ name: 'stdin', mountPath: STDIN_DIR, readOnly: true });
  }
  return { volumes, mounts };
}

function metadata(input: SandboxPodInput): V1Pod['metadata'] {
  const { session } = input.req;
  return {
    name: input.name,
    namespace: input.namespace,
    labels: {
      [componentLabel]: sandboxComponent,
      [agentKey]: labelValue(session.agent),
      [sessionKey]: labelValue(session.sessionId),
      'app.kubernetes.io/managed-by': 'hermes',
    },
    annotations: {
      [agentKey]: session.agent,
      [admissionIdAnnotation]: session.admissionId,
      [sessionKey]: session.sessionId,
    },
  };
}

const pinTo = (node: string): NonNullable<V1Pod['spec']>['affinity'] => ({
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }],
    },
  },
});

/** What a restricted sandbox Pod spec is made of (one call's Pod, or a session sandbox's template). */
export interface RestrictedSpecInput {
  settings: KubernetesSandboxSettings;
  pod?: ExecRequest['pod'];
  command: string[];
  workingDir: string;
  env: V1EnvVar[];
  volumes: V1Volume[];
  mounts: V1VolumeMount[];
}

/**
 * The restricted Pod spec every sandbox runs with: the sandbox ServiceAccount with no token, no
 * service links or host namespaces, a fixed non-root uid, no privilege escalation, ALL
 * capabilities dropped, seccomp RuntimeDefault, a read-only root, requests and limits.
 */
export function restrictedPodSpec(input: RestrictedSpecInput): NonNullable<V1Pod['spec']> {
  const { settings, pod } = input;
  const uid = settings.uid;
  const runtimeClassName = pod?.runtimeClassName ?? settings.runtimeClassName;
  return {
    restartPolicy: 'Never',
    serviceAccountName: settings.serviceAccountName,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    hostNetwork: false,
    hostPID: false,
    hostIPC: false,
    terminationGracePeriodSeconds: 1,
    ...(runtimeClassName ? { runtimeClassName } : {}),
    nodeSelector: { 'kubernetes.io/os': 'linux' },
    securityContext: {
      runAsNonRoot: true, runAsUser: uid, runAsGroup: uid, fsGroup: uid, fsGroupChangePolicy: 'OnRootMismatch',
      seccompProfile: { type: 'RuntimeDefault' },
    },
    containers: [{
      name: CONTAINER_NAME,
      image: pod?.image ?? settings.image,
      imagePullPolicy: 'IfNotPresent',
      command: input.command,
      workingDir: input.workingDir,
      env: input.env,
      resources: {
        requests: { ...settings.requests, ...pod?.resources?.requests },
        limits: { ...settings.limits, ...pod?.resources?.limits },
      },
      securityContext: {
        runAsNonRoot: true, runAsUser: uid, runAsGroup: uid,
        allowPrivilegeEscalation: false, privileged: false, readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      },
      volumeMounts: input.mounts,
      stdin: false,
      tty: false,
    }],
    volumes: input.volumes,
  };
}

/** The sandbox Pod of one call. */
export function sandboxPod(input: SandboxPodInput): V1Pod {
  const { req, settings } = input;
  const { volumes: podVolumes, mounts } = volumes(input);
  const spec = restrictedPodSpec({
    settings, ...(req.pod ? { pod: req.pod } : {}),
    command: containerCommand(req.command, input.stdinConfigMap !== undefined),
    workingDir: req.cwd ?? WORKSPACE_PATH, env: containerEnv(req.env), volumes: podVolumes, mounts,
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: metadata(input),
    spec: {
      ...spec,
      activeDeadlineSeconds: deadlineSeconds(req.timeoutMs, settings.startTimeoutMs),
      ...(input.pinnedNode ? { affinity: pinTo(input.pinnedNode) } : {}),
    },
  };
}
