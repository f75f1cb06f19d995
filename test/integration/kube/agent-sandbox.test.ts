// The real kubernetes-sigs/agent-sandbox controller (v1.0.1, `-extensions`) on the real
// apiserver, its Pods run by the test kubelet and its garbage collected by a real
// kube-controller-manager: a warm pool fills, a claim adopts the warm Sandbox, a suspended
// Sandbox loses its Pod but keeps its workspace PVC, resuming brings a new Pod up on the same
// workspace, and deleting the claim takes the Sandbox, its Pod and its PVC with it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, NetworkingV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import {
  startAgentSandboxController, startControlPlane, startGarbageCollector, startKubelet, waitFor,
  type AgentSandboxController, type ControlPlane, type GarbageCollector, type TestKubelet,
} from '../../support/kube/index.js';

const AGENTS = { group: 'agents.x-k8s.io', version: 'v1beta1' };
const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' };
const LAUNCH_TYPE = 'agents.x-k8s.io/launch-type';

interface Condition { type: string; status: string; reason?: string; message?: string }
interface Meta { name: string; uid: string; labels?: Record<string, string>; annotations?: Record<string, string>;
  ownerReferences?: { kind: string; name: string; controller?: boolean }[] }
interface SandboxObject { metadata: Meta; spec: { operatingMode?: string }; status?: { conditions?: Condition[]; podIPs?: string[]; nodeName?: string } }
interface ClaimObject { metadata: Meta; status?: { conditions?: Condition[]; sandbox?: { name?: string; podIPs?: string[] } } }
interface PoolObject { status?: { replicas?: number; readyReplicas?: number } }

const isReady = (o: { status?: { conditions?: Condition[] } } | undefined): boolean =>
  o?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
const notFound = (err: unknown): boolean => typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 404;

// Writes a token into the workspace the first time, prints what it finds every time, then waits
// for SIGTERM like a real sandbox's long-running process.
const COMMAND = 'if [ -f /workspace/first ]; then echo "kept $(cat /workspace/first)"; '
  + 'else cat /proc/sys/kernel/random/uuid > /workspace/first; echo "wrote $(cat /workspace/first)"; fi; '
  + 'trap "exit 0" TERM; while :; do sleep 1; done';

/** A SandboxTemplate shaped like a real sandbox: restricted pod, read-only root, a workspace PVC. */
function template(name: string): object {
  return {
    apiVersion: `${EXT.group}/${EXT.version}`, kind: 'SandboxTemplate', metadata: { name },
    spec: {
      podTemplate: {
        metadata: { labels: { 'app.kubernetes.io/name': 'hermes-sandbox' }, annotations: { 'hermes.dev/purpose': 'test' } },
        spec: {
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [{
            name: 'sandbox', image: 'hermes/sandbox:test', command: ['sh', '-c', COMMAND],
            securityContext: {
              allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, runAsUser: 1000,
              capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' },
            },
            volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }, { name: 'workspace', mountPath: '/workspace' }],
          }],
          volumes: [{ name: 'tmp', emptyDir: {} }],
        },
      },
      volumeClaimTemplates: [{
        metadata: { name: 'workspace' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      }],
    },
  };
}

describe('agent-sandbox controller on the test plane', () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let gc: GarbageCollector;
  let controller: AgentSandboxController;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;

  beforeAll(async () => {
    cp = await startControlPlane();
    kubelet = await startKubelet(cp);
    controller = await startAgentSandboxController(cp); // installs the CRDs first, so the GC sees them at once
    gc = await startGarbageCollector(cp);
    core = cp.kubeConfig().makeApiClient(CoreV1Api);
    custom = cp.kubeConfig().makeApiClient(CustomObjectsApi);
  }, 180_000);
  afterAll(async () => {
    await controller?.stop();
    await gc?.stop();
    await kubelet?.stop();
    await cp?.stop();
  }, 60_000);

  const printLogs = (): void => onTestFailed(() => {
    console.error(`--- agent-sandbox-controller (${controller.logFile}) ---\n${controller.tail(80)}`);
    console.error(`--- kube-controller-manager (${gc.logFile}) ---\n${gc.tail(20)}`);
    if (kubelet.errors.length > 0) console.error(`--- test kubelet errors ---\n${kubelet.errors.join('\n')}`);
  });

  const get = async <T>(api: typeof AGENTS, namespace: string, plural: string, name: string): Promise<T | undefined> =>
    custom.getNamespacedCustomObject({ ...api, namespace, plural, name }).then((o) => o as T, (err: unknown) => {
      if (notFound(err)) return undefined;
      throw err;
    });
  const create = (api: typeof AGENTS, namespace: string, plural: string, body: object): Promise<unknown> =>
    custom.createNamespacedCustomObject({ ...api, namespace, plural, body });
  const listSandboxes = async (namespace: string): Promise<SandboxObject[]> =>
    ((await custom.listNamespacedCustomObject({ ...AGENTS, namespace, plural: 'sandboxes' })) as { items: SandboxObject[] }).items;
  const readPod = (namespace: string, name: string): Promise<V1Pod | undefined> =>
    core.readNamespacedPod({ namespace, name }).catch((err: unknown) => { if (notFound(err)) return undefined; throw err; });
  const setMode = (namespace: string, name: string, operatingMode: string): Promise<unknown> =>
    custom.patchNamespacedCustomObject({ ...AGENTS, namespace, plural: 'sandboxes', name, body: { spec: { operatingMode } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  const warmSandboxes = async (namespace: string, pool: string): Promise<SandboxObject[]> =>
    (await listSandboxes(namespace)).filter((s) => s.metadata.ownerReferences?.some((o) => o.kind === 'SandboxWarmPool' && o.name === pool && o.controller));
  const claimReady = (namespace: string, name: string): Promise<ClaimObject> => waitFor(async () => {
    const claim = await get<ClaimObject>(EXT, namespace, 'sandboxclaims', name);
    return isReady(claim) && claim?.status?.sandbox?.name ? claim : undefined;
  }, { what: `SandboxClaim ${namespace}/${name} to be Ready`, timeoutMs: 60_000 });
  const runningPod = (namespace: string, name: string, notUid?: string): Promise<V1Pod> => waitFor(async () => {
    const pod = await readPod(namespace, name);
    const ready = pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    return pod?.status?.phase === 'Running' && ready && pod.metadata?.uid !== notUid && !pod.metadata?.deletionTimestamp ? pod : undefined;
  }, { what: `Pod ${namespace}/${name} to run`, timeoutMs: 60_000 });

  describe('a warm pool of one, claimed, suspended, resumed and released', () => {
    let ns: string;
    let warm: SandboxObject;
    let firstPod: V1Pod;
    let token: string;

    it('fills the pool with a Ready Sandbox whose Pod runs on the test kubelet', async () => {
      printLogs();
      ns = await cp.createNamespace('asb-warm');
      await create(EXT, ns, 'sandboxtemplates', template('agent'));
      await create(EXT, ns, 'sandboxwarmpools', { apiVersion: `${EXT.group}/${EXT.version}`, kind: 'SandboxWarmPool',
        metadata: { name: 'pool' }, spec: { replicas: 1, sandboxTemplateRef: { name: 'agent' } } });

      warm = await waitFor(async () => {
        const [sandbox, ...more] = await warmSandboxes(ns, 'pool');
        return more.length === 0 && isReady(sandbox) ? sandbox : undefined;
      }, { what: 'one Ready warm Sandbox', timeoutMs: 60_000 });
      expect(warm.metadata.name).toMatch(/^pool-[a-z0-9]{5}$/);
      expect(warm.metadata.labels?.[LAUNCH_TYPE]).toBe('warm');
      expect(warm.status?.podIPs).toEqual(['127.0.0.1']);
      expect(warm.status?.nodeName).toBe(kubelet.nodeName);

      // The Pod carries the Sandbox's name, is controlled by it, and runs on our Node.
      firstPod = await runningPod(ns, warm.metadata.name);
      expect(firstPod.spec?.nodeName).toBe(kubelet.nodeName);
      expect(firstPod.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Sandbox', name: warm.metadata.name, controller: true })]);
      expect(firstPod.metadata?.labels).toMatchObject({ 'app.kubernetes.io/name': 'hermes-sandbox' });
      expect(firstPod.metadata?.annotations).toMatchObject({ 'hermes.dev/purpose': 'test' });
      // The workspace is a PVC the controller made (`<template>-<sandbox>`), mounted as the kubelet's folder.
      const pvcName = `workspace-${warm.metadata.name}`;
      expect(firstPod.spec?.volumes).toContainEqual({ name: 'workspace', persistentVolumeClaim: { claimName: pvcName } });
      const pvc = await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: pvcName });
      expect(pvc.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Sandbox', name: warm.metadata.name, controller: true })]);
      const tokenFile = join(kubelet.stateDir, 'pvc', ns, pvcName, 'first');
      token = await waitFor(() => existsSync(tokenFile) && readFileSync(tokenFile, 'utf8').trim(), { what: 'the first Pod to write its token' });
      expect(await core.readNamespacedPodLog({ namespace: ns, name: warm.metadata.name })).toBe(`wrote ${token}\n`);
      // The template's default networkPolicyManagement (Managed) makes one shared NetworkPolicy per template.
      const policy = await waitFor(() => cp.kubeConfig().makeApiClient(NetworkingV1Api).readNamespacedNetworkPolicy({ namespace: ns, name: 'agent-network-policy' }),
        { what: 'the template NetworkPolicy' });
      expect(policy.spec?.policyTypes).toEqual(expect.arrayContaining(['Ingress', 'Egress']));
      console.log(`warm Sandbox ${warm.metadata.name}: pod labels ${JSON.stringify(firstPod.metadata?.labels)} annotations ${JSON.stringify(firstPod.metadata?.annotations)}; PVC ${pvcName} phase ${pvc.status?.phase ?? '(none)'}`);
    }, 90_000);

    it('adopts the warm Sandbox for a claim, keeps its Pod, and replenishes the pool', async () => {
      printLogs();
      const started = Date.now();
      await create(EXT, ns, 'sandboxclaims', { apiVersion: `${EXT.group}/${EXT.version}`, kind: 'SandboxClaim',
        metadata: { name: 'alice' }, spec: { warmPoolRef: { name: 'pool' } } });
      const claim = await claimReady(ns, 'alice');
      console.log(`warm claim Ready after ${Date.now() - started} ms; claim labels ${JSON.stringify(claim.metadata.labels)} annotations ${JSON.stringify(claim.metadata.annotations)}`);
      expect(claim.status?.sandbox?.name).toBe(warm.metadata.name);
      expect(claim.status?.sandbox?.podIPs).toEqual(['127.0.0.1']);

      const adopted = await waitFor(async () => {
        const sandbox = await get<SandboxObject>(AGENTS, ns, 'sandboxes', warm.metadata.name);
        return sandbox?.metadata.ownerReferences?.some((o) => o.kind === 'SandboxClaim' && o.name === 'alice' && o.controller) ? sandbox : undefined;
      }, { what: 'the warm Sandbox to be controlled by the claim' });
      expect(adopted.metadata.labels?.[LAUNCH_TYPE]).toBe('warm');
      expect(adopted.metadata.ownerReferences?.some((o) => o.kind === 'SandboxWarmPool')).toBe(false);
      // Adoption keeps the running Pod: same uid, still Running, now labelled with the claim.
      const pod = await waitFor(async () => {
        const p = await readPod(ns, warm.metadata.name);
        return p?.metadata?.labels?.['agents.x-k8s.io/claim-uid'] === claim.metadata.uid ? p : undefined;
      }, { what: 'the adopted Pod to carry the claim uid' });
      expect(pod.metadata?.uid).toBe(firstPod.metadata?.uid);
      expect(pod.status?.phase).toBe('Running');
      console.log(`adopted pod labels ${JSON.stringify(pod.metadata?.labels)} annotations ${JSON.stringify(pod.metadata?.annotations)}`);

      const replacement = await waitFor(async () => {
        const [sandbox, ...more] = await warmSandboxes(ns, 'pool');
        return more.length === 0 && isReady(sandbox) ? sandbox : undefined;
      }, { what: 'the pool to hold one Ready Sandbox again', timeoutMs: 60_000 });
      expect(replacement.metadata.name).not.toBe(warm.metadata.name);
      const pool = await waitFor(async () => {
        const p = await get<PoolObject>(EXT, ns, 'sandboxwarmpools', 'pool');
        return p?.status?.readyReplicas === 1 ? p : undefined;
      }, { what: 'the pool status to report one ready replica' });
      expect(pool.status?.replicas).toBe(1);
    }, 90_000);

    it('suspending deletes the Pod but keeps the Sandbox and its PVC; resuming runs a new Pod on the same workspace', async () => {
      printLogs();
      const name = warm.metadata.name;
      const pvcName = `workspace-${name}`;
      await setMode(ns, name, 'Suspended');
      await waitFor(async () => (await readPod(ns, name)) === undefined, { what: `Pod ${name} to be deleted on suspend`, timeoutMs: 60_000 });
      const suspended = await waitFor(async () => {
        const s = await get<SandboxObject>(AGENTS, ns, 'sandboxes', name);
        return s?.status?.conditions?.some((c) => c.type === 'Suspended' && c.status === 'True') ? s : undefined;
      }, { what: 'the Sandbox to report Suspended' });
      expect(isReady(suspended)).toBe(false);
      expect(suspended.status?.podIPs ?? []).toEqual([]);
      expect(kubelet.errors).toEqual([]);
      await expect(core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: pvcName })).resolves.toBeDefined();
      expect(readFileSync(join(kubelet.stateDir, 'pvc', ns, pvcName, 'first'), 'utf8').trim()).toBe(token);

      await setMode(ns, name, 'Running');
      const second = await runningPod(ns, name, firstPod.metadata?.uid);
      expect(second.spec?.volumes).toContainEqual({ name: 'workspace', persistentVolumeClaim: { claimName: pvcName } });
      await waitFor(async () => (await core.readNamespacedPodLog({ namespace: ns, name })).includes('\n') || undefined,
        { what: 'the second Pod to print what it found' });
      expect(await core.readNamespacedPodLog({ namespace: ns, name })).toBe(`kept ${token}\n`);
      const resumed = await waitFor(async () => {
        const s = await get<SandboxObject>(AGENTS, ns, 'sandboxes', name);
        return isReady(s) ? s : undefined;
      }, { what: 'the resumed Sandbox to be Ready' });
      expect(resumed.status?.conditions?.find((c) => c.type === 'Suspended')?.status).toBe('False');
      await claimReady(ns, 'alice');
    }, 120_000);

    it('deleting the claim deletes its Sandbox, Pod and PVC (ownerReferences, through the garbage collector)', async () => {
      printLogs();
      const name = warm.metadata.name;
      await custom.deleteNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims', name: 'alice' });
      await waitFor(async () => (await get(AGENTS, ns, 'sandboxes', name)) === undefined, { what: `Sandbox ${name} to be deleted`, timeoutMs: 60_000 });
      await waitFor(async () => (await readPod(ns, name)) === undefined, { what: `Pod ${name} to be deleted`, timeoutMs: 60_000 });
      await waitFor(async () => (await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: `workspace-${name}` }).then(() => false, (err: unknown) => notFound(err))),
        { what: `PVC workspace-${name} to be deleted`, timeoutMs: 60_000 });
      // The pool's own Sandbox is untouched.
      expect(await warmSandboxes(ns, 'pool')).toHaveLength(1);
    }, 120_000);
  });

  it('a claim on an empty pool (replicas 0) cold-starts a Sandbox named after the claim', async () => {
    printLogs();
    const ns = await cp.createNamespace('asb-cold');
    await create(EXT, ns, 'sandboxtemplates', template('agent'));
    await create(EXT, ns, 'sandboxwarmpools', { apiVersion: `${EXT.group}/${EXT.version}`, kind: 'SandboxWarmPool',
      metadata: { name: 'empty' }, spec: { replicas: 0, sandboxTemplateRef: { name: 'agent' } } });
    const started = Date.now();
    await create(EXT, ns, 'sandboxclaims', { apiVersion: `${EXT.group}/${EXT.version}`, kind: 'SandboxClaim',
      metadata: { name: 'bob' }, spec: { warmPoolRef: { name: 'empty' } } });
    const claim = await claimReady(ns, 'bob');
    console.log(`cold claim Ready after ${Date.now() - started} ms`);
    expect(claim.status?.sandbox?.name).toBe('bob');
    const sandbox = await get<SandboxObject>(AGENTS, ns, 'sandboxes', 'bob');
    expect(sandbox?.metadata.labels?.[LAUNCH_TYPE]).toBe('cold');
    expect(sandbox?.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'SandboxClaim', name: 'bob', controller: true })]);
    const pod = await runningPod(ns, 'bob');
    expect(pod.metadata?.labels?.['agents.x-k8s.io/claim-uid']).toBe(claim.metadata.uid);
    expect(await warmSandboxes(ns, 'empty')).toEqual([]);
    expect(controller.forbidden()).toEqual([]);
  }, 90_000);
});
