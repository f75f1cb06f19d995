// pod-spec.ts field by field: the restricted policy, no secrets, the command, stdin, pinning,
// the Profile's overrides.
import { describe, expect, it } from 'vitest';
import { defaultKubernetesSandboxSettings } from '../../../services/sandbox/index.js';
import { containerCommand, sandboxPod, STDIN_DIR } from '../../../services/sandbox/kubernetes/pod-spec.js';
import { labelValue, networkPolicyName, workspacePvcName } from '../../../services/sandbox/kubernetes/names.js';
import { requestProblem } from '../../../services/sandbox/kubernetes/request-check.js';
import { execRequest, testSession } from '../../support/sandbox-request.js';

const settings = defaultKubernetesSandboxSettings;
const session = testSession('team-a', 'coder', '6f1c7a54-0d3b-4c1e-9a59-1f0e2a3b4c5d');
const build = (over: Parameters<typeof execRequest>[2] = {}, extra: { pinnedNode?: string; stdinConfigMap?: string } = {}) =>
  sandboxPod({ name: 'hermes-sandbox-abc', namespace: 'team-a', req: execRequest(session, 'ls -la', over), pvcName: 'hermes-workspace-x', settings, ...extra });

describe('sandbox Pod spec', () => {
  it('runs the command as /bin/sh -c in one container, restartPolicy Never, with the deadline of its timeout', () => {
    const pod = build({ timeoutMs: 180_500 });
    expect(pod.spec?.containers).toHaveLength(1);
    expect(pod.spec?.initContainers).toBeUndefined();
    expect(pod.spec?.containers[0]?.command).toEqual(['/bin/sh', '-c', 'ls -la']);
    expect(pod.spec?.containers[0]?.args).toBeUndefined();
    expect(pod.spec?.restartPolicy).toBe('Never');
    expect(pod.spec?.activeDeadlineSeconds).toBe(181 + 60);
    expect(pod.spec?.terminationGracePeriodSeconds).toBe(1);
  });

  it('has the restricted security context at Pod and container level', () => {
    const pod = build();
    expect(pod.spec?.securityContext).toEqual({
      runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, fsGroupChangePolicy: 'OnRootMismatch',
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.spec?.containers[0]?.securityContext).toEqual({
      runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, allowPrivilegeEscalation: false, privileged: false,
      readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.spec?.hostNetwork).toBe(false);
    expect(pod.spec?.hostPID).toBe(false);
    expect(pod.spec?.hostIPC).toBe(false);
  });

  it('carries no token, no Secret and no environment but its own', () => {
    const pod = build({ env: { FOO: 'bar' } });
    const c = pod.spec!.containers[0]!;
    expect(pod.spec?.serviceAccountName).toBe('hermes-sandbox');
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    expect(pod.spec?.enableServiceLinks).toBe(false);
    expect(pod.spec?.imagePullSecrets).toBeUndefined();
    expect(c.envFrom).toBeUndefined();
    expect(c.env).toEqual([
      { name: 'PATH', value: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' },
      { name: 'HOME', value: '/workspace' }, { name: 'LANG', value: 'C.UTF-8' }, { name: 'TMPDIR', value: '/tmp' },
      { name: 'FOO', value: 'bar' },
    ]);
    expect(pod.spec?.volumes).toEqual([
      { name: 'workspace', persistentVolumeClaim: { claimName: 'hermes-workspace-x' } },
      { name: 'tmp', emptyDir: { sizeLimit: '1Gi' } },
    ]);
    expect(c.volumeMounts).toEqual([{ name: 'workspace', mountPath: '/workspace' }, { name: 'tmp', mountPath: '/tmp' }]);
    expect(c.workingDir).toBe('/workspace');
  });

  it('is labelled and annotated for the hygiene controller and the NetworkPolicy', () => {
    const pod = build();
    expect(pod.metadata?.labels).toMatchObject({ 'hermes.dev/component': 'sandbox', 'hermes.dev/agent': 'coder', 'hermes.dev/session': session.sessionId });
    expect(pod.metadata?.annotations?.['hermes.dev/admission-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(pod.metadata?.annotations?.['hermes.dev/agent']).toBe('coder');
  });

  it('takes resources, image and runtimeClassName from the Profile over the defaults, key by key', () => {
    const pod = build({ pod: { image: 'python:3.12', runtimeClassName: 'gvisor', resources: { limits: { memory: '4Gi' }, requests: { cpu: '500m' } } } });
    const c = pod.spec!.containers[0]!;
    expect(c.image).toBe('python:3.12');
    expect(pod.spec?.runtimeClassName).toBe('gvisor');
    expect(c.resources).toEqual({
      requests: { cpu: '500m', memory: '256Mi', 'ephemeral-storage': '256Mi' },
      limits: { cpu: '1', memory: '4Gi', 'ephemeral-storage': '2Gi' },
    });
    expect(build().spec?.runtimeClassName).toBeUndefined();
  });

  it('pins to a Node by name, and mounts stdin read-only when given', () => {
    const pod = build({}, { pinnedNode: 'node-7', stdinConfigMap: 'hermes-sandbox-abc-stdin' });
    expect(pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms)
      .toEqual([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-7'] }] }]);
    expect(pod.spec?.volumes).toContainEqual({ name: 'stdin', configMap: { name: 'hermes-sandbox-abc-stdin', defaultMode: 0o444 } });
    expect(pod.spec?.containers[0]?.volumeMounts).toContainEqual({ name: 'stdin', mountPath: STDIN_DIR, readOnly: true });
    expect(pod.spec?.containers[0]?.command).toEqual(containerCommand('ls -la', true));
    expect(containerCommand('x', true).slice(-1)).toEqual(['x']); // the command is an argument, never spliced into the wrapper
    expect(build().spec?.affinity).toBeUndefined();
  });
});

describe('sandbox names and request checks', () => {
  it('makes valid label values and names from anything', () => {
    expect(labelValue('coder')).toBe('coder');
    const long = labelValue('a'.repeat(100));
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/);
    expect(labelValue('bad value/x')).toMatch(/^bad-value-x-[0-9a-f]{12}$/);
    expect(workspacePvcName('6F1C7A54-0D3B')).toMatch(/^hermes-workspace-[a-z0-9-]+$/);
    expect(networkPolicyName('my.agent')).toMatch(/^hermes-sandbox-[a-z0-9-]+$/);
  });

  it('refuses paths outside /workspace, bad variable names and oversized stdin', () => {
    const req = (over: Parameters<typeof execRequest>[2]) => requestProblem(execRequest(session, 'ls', over));
    expect(req({ cwd: '/workspace/a/b' })).toBeUndefined();
    expect(req({ cwd: '/workspace' })).toBeUndefined();
    for (const cwd of ['/', '/etc', 'rel', '/workspace/../etc', '/workspace2', '/workspace/./x/..']) expect(req({ cwd })).toContain('/workspace');
    expect(req({ env: { 'BAD-NAME': 'x' } })).toContain('not an environment variable name');
    expect(req({ stdin: 'x'.repeat(1_000_001) })).toContain('send it in parts');
    expect(requestProblem(execRequest(session, '   '))).toContain('empty');
    expect(requestProblem(execRequest(session, `echo ${'x'.repeat(100_000)}`))).toContain('write a long script to a file first');
    expect(req({ env: { BIG: 'x'.repeat(100_000) } })).toContain('more than 100000');
  });
});
