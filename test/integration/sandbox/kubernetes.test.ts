// The kubernetes sandbox backend against a real kube-apiserver and the test kubelet: the stored
// Pod against the restricted policy (enforced by the apiserver's PodSecurity admission) and "no
// secrets", logs, exit codes, stdin, timeouts, deletion on abort, the workspace across calls and
// the Agent's NetworkPolicy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, NetworkingV1Api, type V1Pod } from '@kubernetes/client-node';
import { kubernetesSandbox, type Sandbox } from '../../../services/sandbox/index.js';
import { workspacePvcName } from '../../../services/sandbox/kubernetes/names.js';
import {
  admissionIdAnnotation, agentKey, componentLabel, lastUsedAtAnnotation, nodeAnnotation, ttlSecondsAnnotation,
} from '../../../services/core/index.js';
import { pidsWithArg, startControlPlane, startKubelet, waitFor, type ControlPlane, type TestKubelet } from '../../support/kube/index.js';
import { execRequest, testSession } from '../../support/sandbox-request.js';

describe('kubernetes sandbox backend', () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let core: CoreV1Api;
  let sandbox: Sandbox;
  /** Every sandbox Pod the apiserver stored, as admitted (they are deleted when calls end). */
  const seen = new Map<string, V1Pod>();
  let stopWatch: (() => void) | undefined;

  beforeAll(async () => {
    cp = await startControlPlane();
    kubelet = await startKubelet(cp);
    core = cp.kubeConfig().makeApiClient(CoreV1Api);
    sandbox = kubernetesSandbox({ kubeConfig: cp.kubeConfig(), settings: { image: 'test/sandbox:1', pollMs: 500 } });
    const { Watch } = await import('@kubernetes/client-node');
    const ctl = await new Watch(cp.kubeConfig()).watch('/api/v1/pods', { labelSelector: `${componentLabel}=sandbox` },
      (type: string, pod: V1Pod) => { if (type === 'ADDED') seen.set(`${pod.metadata?.namespace}/${pod.metadata?.name}`, pod); }, () => undefined);
    stopWatch = () => ctl.abort();
  });

  afterAll(async () => {
    stopWatch?.();
    await sandbox?.close();
    await kubelet?.stop();
    await cp?.stop();
  });

  /** A namespace that enforces Pod Security `restricted`: the apiserver refuses any Pod that breaks it. */
  async function restrictedNamespace(prefix: string): Promise<string> {
    const ns = await cp.createNamespace(prefix);
    await core.patchNamespace({ name: ns, body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } } } },
      (await import('@kubernetes/client-node')).setHeaderOptions('Content-Type', (await import('@kubernetes/client-node')).PatchStrategy.MergePatch));
    return ns;
  }

  const podsOf = (ns: string) => [...seen.entries()].filter(([k]) => k.startsWith(`${ns}/`)).map(([, p]) => p);

  it('runs the command as the container command and reports output and exit code', async () => {
    const ns = await restrictedNamespace('exit');
    const session = testSession(ns);
    const ok = await sandbox.exec(execRequest(session, 'echo hello; echo oops >&2; pwd'));
    expect(ok).toMatchObject({ status: 'ok', exitCode: 0, truncated: false });
    expect(ok.output).toContain('hello\n');
    expect(ok.output).toContain('oops\n');
    expect(ok.output).toContain('/workspace\n');
    const failed = await sandbox.exec(execRequest(session, 'echo before; exit 7'));
    expect(failed).toMatchObject({ status: 'ok', exitCode: 7, output: 'before\n' });
  });

  it('stores a Pod that passes PodSecurity restricted, with no token, no Secret and no inherited environment', async () => {
    const ns = await restrictedNamespace('spec');
    const session = testSession(ns, 'spec-agent');
    const result = await sandbox.exec(execRequest(session, 'env | sort', { env: { EXTRA: 'one' } }));
    expect(result.status).toBe('ok');
    // The container's whole environment: ours and the request's, nothing of the worker's.
    const names = result.output.trim().split('\n').map((l) => l.split('=')[0]).filter((n) => n !== 'PWD' && n !== 'SHLVL' && n !== '_');
    expect(names.sort()).toEqual(['EXTRA', 'HOME', 'HOSTNAME', 'LANG', 'PATH', 'TMPDIR']);
    const [pod] = podsOf(ns);
    expect(pod).toBeDefined();
    const spec = pod!.spec!;
    const c = spec.containers[0]!;
    expect(spec.containers).toHaveLength(1);
    expect(spec.initContainers ?? []).toHaveLength(0);
    expect(c.command).toEqual(['/bin/sh', '-c', 'env | sort']);
    expect(c.image).toBe('test/sandbox:1');
    expect(spec.restartPolicy).toBe('Never');
    expect(spec.serviceAccountName).toBe('hermes-sandbox');
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.enableServiceLinks).toBe(false);
    expect(spec.hostNetwork ?? false).toBe(false);
    expect(spec.hostPID ?? false).toBe(false);
    expect(spec.hostIPC ?? false).toBe(false);
    expect(spec.activeDeadlineSeconds).toBe(30 + 60);
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } });
    expect(c.securityContext).toMatchObject({
      runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false, privileged: false,
      readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(c.securityContext?.capabilities?.add ?? []).toEqual([]);
    expect(c.resources?.requests).toMatchObject({ cpu: '100m', memory: '256Mi' });
    expect(c.resources?.limits).toMatchObject({ cpu: '1', memory: '2Gi' });
    // No Secret of any kind: no envFrom, no valueFrom, no secret or projected volume (the
    // ServiceAccount admission plugin would have added a token volume without automount false).
    expect(c.envFrom ?? []).toEqual([]);
    expect((c.env ?? []).every((e) => e.valueFrom === undefined && typeof e.value === 'string')).toBe(true);
    expect((spec.volumes ?? []).filter((v) => v.secret || v.projected || v.csi || v.hostPath)).toEqual([]);
    expect((spec.volumes ?? []).map((v) => v.name).sort()).toEqual(['tmp', 'workspace']);
    expect(spec.volumes?.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.claimName).toBe(workspacePvcName(session.sessionId));
    expect(spec.volumes?.find((v) => v.name === 'tmp')?.emptyDir).toBeDefined();
    expect(c.volumeMounts?.map((m) => m.mountPath).sort()).toEqual(['/tmp', '/workspace']);
    expect(spec.imagePullSecrets ?? []).toEqual([]);
    expect(pod!.metadata?.labels).toMatchObject({ [componentLabel]: 'sandbox', [agentKey]: 'spec-agent' });
    expect(pod!.metadata?.annotations?.[admissionIdAnnotation]).toMatch(/^[0-9a-f-]{36}$/);
    // The ServiceAccount was created, and mounts no token either.
    const sa = await core.readNamespacedServiceAccount({ name: 'hermes-sandbox', namespace: ns });
    expect(sa.automountServiceAccountToken).toBe(false);
  });

  it('passes stdin to the command, large content included', async () => {
    const ns = await cp.createNamespace('stdin');
    const session = testSession(ns);
    const big = `${'x'.repeat(300_000)}\nend "quoted" $HOME \`tick\`\n`;
    const result = await sandbox.exec(execRequest(session, 'wc -c', { stdin: big }));
    expect(result).toMatchObject({ status: 'ok', exitCode: 0 });
    expect(result.output.trim()).toBe(String(Buffer.byteLength(big)));
    const copy = await sandbox.exec(execRequest(session, 'cat > /workspace/in.txt && tail -n 1 /workspace/in.txt && cmp -s /workspace/in.txt - < /workspace/in.txt', { stdin: big }));
    expect(copy).toMatchObject({ status: 'ok', exitCode: 0, output: 'end "quoted" $HOME `tick`\n' });
    const none = await sandbox.exec(execRequest(session, 'cat; echo done'));
    expect(none.output).toBe('done\n'); // no stdin: the command reads an empty input
    // The stdin ConfigMaps are gone with their Pods.
    const cms = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app.kubernetes.io/managed-by=hermes' });
    expect(cms.items).toEqual([]);
  });

  it('caps a flood of output, keeping its head and tail', async () => {
    const ns = await cp.createNamespace('flood');
    const result = await sandbox.exec(execRequest(testSession(ns), 'echo FIRST; seq 1 200000; echo LAST', { maxOutputChars: 2_000 }));
    expect(result).toMatchObject({ status: 'ok', exitCode: 0, truncated: true });
    expect(result.output.slice(0, 40)).toMatch(/^FIRST\n1\n2\n/);
    expect(result.output.slice(-40)).toMatch(/\n200000\nLAST\n$/);
    expect(result.output.length).toBeLessThan(2_100);
  });

  it('keeps the session workspace across calls, annotated for the hygiene controller', async () => {
    const ns = await cp.createNamespace('ws');
    const session = testSession(ns);
    const first = await sandbox.exec(execRequest(session, 'echo remembered > /workspace/note && mkdir -p /workspace/sub'));
    expect(first).toMatchObject({ status: 'ok', exitCode: 0 });
    const pvc1 = await core.readNamespacedPersistentVolumeClaim({ name: workspacePvcName(session.sessionId), namespace: ns });
    const second = await sandbox.exec(execRequest(session, 'cat /workspace/note; pwd', { cwd: '/workspace/sub' }));
    expect(second).toMatchObject({ status: 'ok', exitCode: 0, output: 'remembered\n/workspace/sub\n' });
    const other = await sandbox.exec(execRequest(testSession(ns), 'cat /workspace/note'));
    expect(other.exitCode).not.toBe(0); // another session has its own workspace
    const pvc = await core.readNamespacedPersistentVolumeClaim({ name: workspacePvcName(session.sessionId), namespace: ns });
    expect(pvc.metadata?.labels?.[componentLabel]).toBe('workspace');
    expect(pvc.metadata?.labels?.[agentKey]).toBe('coder');
    expect(pvc.metadata?.annotations?.[ttlSecondsAnnotation]).toBe('3600');
    expect(pvc.metadata?.annotations?.[nodeAnnotation]).toBe(kubelet.nodeName);
    expect(pvc.spec?.accessModes).toEqual(['ReadWriteOnce']);
    expect(pvc.spec?.resources?.requests?.storage).toBe('1Gi');
    expect(Date.parse(pvc.metadata!.annotations![lastUsedAtAnnotation]!)).toBeGreaterThan(Date.parse(pvc1.metadata!.annotations![lastUsedAtAnnotation]!));
  });

  it('refuses a working directory outside /workspace without creating a Pod', async () => {
    const ns = await cp.createNamespace('cwd');
    for (const cwd of ['/etc', '/workspace/../etc', 'workspace', '/workspacex']) {
      const result = await sandbox.exec(execRequest(testSession(ns), 'pwd', { cwd }));
      expect(result).toMatchObject({ status: 'degraded', exitCode: -1 });
      expect(result.reason).toContain('/workspace');
    }
    expect(podsOf(ns)).toEqual([]);
  });

  it('times out a command past timeoutMs, deletes its Pod and kills its process', async () => {
    const ns = await cp.createNamespace('timeout');
    const marker = `sleep-${Date.now()}`;
    const result = await sandbox.exec(execRequest(testSession(ns), `echo started; exec sleep 300 # ${marker}`, { timeoutMs: 2_000 }));
    expect(result.status).toBe('timeout');
    expect(result.exitCode).toBe(137);
    expect(result.output).toContain('started');
    await waitFor(async () => (await core.listNamespacedPod({ namespace: ns })).items.length === 0, { what: 'the timed-out Pod to be gone' });
    await waitFor(() => pidsWithArg(`echo started; exec sleep 300 # ${marker}`).length === 0, { what: 'the sandboxed process to be gone' });
  });

  it('deletes the Pod when the call is aborted (/stop) and answers interrupted', async () => {
    const ns = await cp.createNamespace('abort');
    const stop = new AbortController();
    const command = `echo running; sleep 300 # abort-${Date.now()}`;
    const running = await sandbox.start(execRequest(testSession(ns), command, { signal: stop.signal }));
    await waitFor(() => running.output().text.includes('running'), { what: 'the command to print' });
    stop.abort();
    const result = await running.done;
    expect(result.status).toBe('interrupted');
    // By the time the result is back the Pod is deleted (or being deleted).
    const left = (await core.listNamespacedPod({ namespace: ns })).items;
    expect(left.every((p) => p.metadata?.deletionTimestamp)).toBe(true);
    await waitFor(async () => (await core.listNamespacedPod({ namespace: ns })).items.length === 0, { what: 'the aborted Pod to be gone' });
    await waitFor(() => pidsWithArg(command).length === 0, { what: 'the sandboxed process to be gone' });
  });

  it('starts a background command whose output rolls and which kill() ends', async () => {
    const ns = await cp.createNamespace('bg');
    const running = await sandbox.start(execRequest(testSession(ns), 'i=0; while true; do i=$((i+1)); echo line-$i; sleep 0.05; done', { maxOutputChars: 50 }));
    await waitFor(() => running.output().truncated, { what: 'the rolling output to drop old lines' });
    expect(running.output().text.length).toBeLessThanOrEqual(50);
    running.kill();
    const done = await running.done;
    expect(done.status).toBe('interrupted');
    await waitFor(async () => (await core.listNamespacedPod({ namespace: ns })).items.length === 0, { what: 'the killed Pod to be gone' });
  });

  it('writes the Agent\'s NetworkPolicy: default deny, and only what the allowlist names', async () => {
    const ns = await cp.createNamespace('netpol');
    const net = cp.kubeConfig().makeApiClient(NetworkingV1Api);
    const none = await sandbox.exec(execRequest(testSession(ns, 'closed'), 'true'));
    expect(none.status).toBe('ok');
    const closed = await net.readNamespacedNetworkPolicy({ name: 'hermes-sandbox-closed', namespace: ns });
    expect(closed.spec?.podSelector?.matchLabels).toEqual({ [componentLabel]: 'sandbox', [agentKey]: 'closed' });
    expect(closed.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(closed.spec?.ingress ?? []).toEqual([]);
    expect(closed.spec?.egress ?? []).toEqual([]);

    const allow = ['0.0.0.0/0:443', '10.1.0.0/16:5432', 'pypi.org:443'];
    const open = await sandbox.exec(execRequest(testSession(ns, 'open'), 'true', { network: { egress: 'allowlist', allow } }));
    expect(open.status).toBe('ok');
    const policy = await net.readNamespacedNetworkPolicy({ name: 'hermes-sandbox-open', namespace: ns });
    const egress = policy.spec?.egress ?? [];
    expect(egress[0]).toMatchObject({ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'] } }], ports: [{ protocol: 'TCP', port: 443 }] });
    expect(egress[1]).toMatchObject({ to: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ protocol: 'TCP', port: 5432 }] });
    expect(egress[1]!.to![0]!.ipBlock!.except ?? []).toEqual([]);
    // The host rule opens only what the name resolved to, never a private address, plus DNS to the cluster DNS.
    const last = egress[egress.length - 1]!;
    expect(last.ports).toEqual([{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }]);
    expect(last.to?.[0]?.namespaceSelector?.matchLabels).toEqual({ 'kubernetes.io/metadata.name': 'kube-system' });
    for (const rule of egress.slice(2, -1)) {
      for (const peer of rule.to ?? []) expect(peer.ipBlock?.cidr).toMatch(/\/(32|128)$/);
    }
    // The policy selects only that Agent's sandbox Pods.
    expect(policy.spec?.podSelector?.matchLabels).toEqual({ [componentLabel]: 'sandbox', [agentKey]: 'open' });
  });
});
