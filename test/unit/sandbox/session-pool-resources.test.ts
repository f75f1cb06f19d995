// Mode session's objects as pure functions (services/sandbox/agent-sandbox/resources.ts) and the
// idle/TTL verdict of the operator's sweep: the template's Pod is the restricted sandbox Pod
// with an idle shell, never labelled as a per-call sandbox (the hygiene controller would delete
// it), with a workspace volume per sandbox and deny-all networking; names are valid and stable.
import { describe, expect, it } from 'vitest';
import { componentLabel, idleSecondsAnnotation, inUseUntilAnnotation, lastUsedAtAnnotation, profileKey, profileNamespaceKey, sandboxComponent, ttlSecondsAnnotation, type CompiledSandbox } from '../../../services/core/index.js';
import { defaultKubernetesSandboxSettings, sessionClaimName, sessionPoolName, sessionPoolSelector, sessionTemplate, sessionWarmPool } from '../../../services/sandbox/index.js';
import { claimVerdict, leased } from '../../../operator/controllers/session-sweep.js';

const sandbox: CompiledSandbox = {
  mode: 'session', timeoutSeconds: 180, workspace: { size: '7Gi', ttlSeconds: 3_600 },
  network: { egress: 'none', allow: [] }, warmPool: { size: 3 }, image: 'example.org/tools:1', runtimeClassName: 'gvisor',
  resources: { limits: { memory: '4Gi' } },
};
const input = { profile: 'Coder.Profile', profileNamespace: 'agents', namespace: 'team-a', sandbox, settings: defaultKubernetesSandboxSettings };
import type { V1PersistentVolumeClaim, V1PodSpec } from '@kubernetes/client-node';
type Spec = { podTemplate: { metadata: { labels: Record<string, string> }; spec: V1PodSpec }; volumeClaimTemplates: V1PersistentVolumeClaim[]; networkPolicy: unknown; networkPolicyManagement: string; service: boolean };

describe('a Profile\'s SandboxTemplate', () => {
  const t = sessionTemplate(input);
  const spec = t.spec as unknown as Spec;
  const pod = spec.podTemplate.spec;
  const container = pod.containers[0]!;

  it('is named after the Profile with a valid DNS name, in the sandbox namespace', () => {
    expect(t.kind).toBe('SandboxTemplate');
    expect(t.metadata.name).toBe(sessionPoolName('Coder.Profile'));
    expect(t.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(t.metadata.namespace).toBe('team-a');
    expect(t.metadata.annotations?.[profileKey]).toBe('Coder.Profile');
    // Labelled with the Profile's name and namespace: what it leaves in other namespaces is found by them.
    expect(t.metadata.labels).toMatchObject({ [profileKey]: 'Coder.Profile', [profileNamespaceKey]: 'agents' });
    expect(sessionPoolSelector('agents', 'Coder.Profile')).toBe(`${profileKey}=Coder.Profile,${profileNamespaceKey}=agents,app.kubernetes.io/managed-by=hermes`);
  });

  it('runs the restricted sandbox Pod with the Profile\'s image, runtime class and resources, and an idle shell', () => {
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.serviceAccountName).toBe(defaultKubernetesSandboxSettings.serviceAccountName);
    expect(pod.enableServiceLinks).toBe(false);
    expect(pod.runtimeClassName).toBe('gvisor');
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.activeDeadlineSeconds).toBeUndefined();
    expect(container.image).toBe('example.org/tools:1');
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, privileged: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(container.resources?.limits?.memory).toBe('4Gi');
    expect(container.resources?.requests).toEqual(defaultKubernetesSandboxSettings.requests);
    expect(container.command?.join(' ')).toMatch(/trap .*TERM.*sleep/);
    expect(container.env?.map((e) => e.name).sort()).toEqual(['HOME', 'LANG', 'PATH', 'TMPDIR']);
    expect(JSON.stringify(pod)).not.toMatch(/secret/i);
  });

  it('mounts a workspace volume per sandbox at /workspace and a private /tmp', () => {
    expect(container.volumeMounts).toEqual([{ name: 'workspace', mountPath: '/workspace' }, { name: 'tmp', mountPath: '/tmp' }]);
    expect(pod.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: defaultKubernetesSandboxSettings.tmpSize } }]);
    expect(spec.volumeClaimTemplates).toHaveLength(1);
    expect(spec.volumeClaimTemplates[0]?.metadata?.name).toBe('workspace');
    expect(spec.volumeClaimTemplates[0]?.spec).toMatchObject({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '7Gi' } } });
  });

  it('is never labelled as a per-call sandbox, and denies all traffic through agent-sandbox\'s policy', () => {
    expect(spec.podTemplate.metadata.labels[componentLabel]).toBe('session-sandbox');
    expect(spec.podTemplate.metadata.labels[componentLabel]).not.toBe(sandboxComponent);
    expect(spec.networkPolicyManagement).toBe('Managed');
    expect(spec.networkPolicy).toEqual({ ingress: [], egress: [] });
    expect(spec.service).toBe(false);
  });
});

describe('a Profile\'s SandboxWarmPool', () => {
  it('keeps warmPool.size sandboxes of the template, 1 by default, replacing stale ones at once', () => {
    const pool = sessionWarmPool(input);
    expect(pool.spec).toEqual({ replicas: 3, sandboxTemplateRef: { name: sessionPoolName('Coder.Profile') }, updateStrategy: { type: 'Recreate' } });
    const { warmPool: _w, ...noSize } = sandbox;
    expect(sessionWarmPool({ ...input, sandbox: noSize }).spec.replicas).toBe(1);
  });
});

describe('session claim names', () => {
  const name = (namespace: string, agent: string, sessionId: string) => sessionClaimName({ namespace, agent, sessionId });
  it('are stable per (namespace, agent, session), distinct otherwise, and valid object names', () => {
    const a = name('team-a', 'coder', 'session-1');
    expect(name('team-a', 'coder', 'session-1')).toBe(a);
    expect(name('team-a', 'coder', 'session-2')).not.toBe(a);
    expect(name('team-a', 'coder2', 'session-1')).not.toBe(a);
    expect(name('team-b', 'coder', 'session-1')).not.toBe(a);
    expect(name('t', 'a', 'b\0c')).not.toBe(name('t', 'a\0b', 'c'));
    expect(a).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(a.length).toBeLessThanOrEqual(63);
  });
});

describe('the idle and TTL verdict of a session claim', () => {
  const now = Date.parse('2026-12-03T12:00:00Z');
  const claim = (usedSecondsAgo: number, idle = 1_800, ttl = 604_800) => ({ metadata: { annotations: {
    [lastUsedAtAnnotation]: new Date(now - usedSecondsAgo * 1_000).toISOString(), [idleSecondsAnnotation]: String(idle), [ttlSecondsAnnotation]: String(ttl),
  } } });

  it('keeps a claim used within its idle time, suspends one idle past it, deletes one past its TTL', () => {
    expect(claimVerdict(claim(60), now)).toBe('keep');
    expect(claimVerdict(claim(1_801), now)).toBe('suspend');
    expect(claimVerdict(claim(604_801), now)).toBe('delete');
    expect(claimVerdict(claim(100, 60), now)).toBe('suspend');
  });

  it('defaults the idle time to 30 minutes and never acts on a claim it cannot date', () => {
    expect(claimVerdict({ metadata: { annotations: { [lastUsedAtAnnotation]: new Date(now - 1_700_000).toISOString() } } }, now)).toBe('keep');
    expect(claimVerdict({ metadata: { annotations: { [lastUsedAtAnnotation]: new Date(now - 1_900_000).toISOString() } } }, now)).toBe('suspend');
    expect(claimVerdict({ metadata: { annotations: { [lastUsedAtAnnotation]: 'yesterday' } } }, now)).toBe('keep');
  });

  it('holds a Sandbox leased by a worker until the lease runs out', () => {
    const until = (ms: number) => ({ metadata: { annotations: { [inUseUntilAnnotation]: new Date(now + ms).toISOString() } } });
    expect(leased(until(1_000), now)).toBe(true);
    expect(leased(until(0), now)).toBe(false);
    expect(leased(until(-1_000), now)).toBe(false);
    expect(leased({}, now)).toBe(false);
  });
});
