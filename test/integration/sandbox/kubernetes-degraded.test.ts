// The kubernetes sandbox backend when the cluster fails it: every case is `degraded`, exit code
// -1 (the command did not run) with a reason and a retry hint, and nothing is left running; a
// command cut off from the apiserver while it runs is reported as possibly run, never re-run.
import { readFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { kubernetesSandbox, type Sandbox } from '../../../services/sandbox/index.js';
import { workspacePvcName } from '../../../services/sandbox/kubernetes/names.js';
import { startControlPlane, startKubelet, waitFor, type ControlPlane, type TestKubelet } from '../../support/kube/index.js';
import { execRequest, testSession } from '../../support/sandbox-request.js';

describe('kubernetes sandbox backend, degraded', () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let core: CoreV1Api;
  let sandbox: Sandbox;
  const ns: Record<'quota' | 'image' | 'runtime' | 'nonode' | 'lost' | 'deadline', string> = { quota: '', image: '', runtime: '', nonode: '', lost: '', deadline: '' };

  beforeAll(async () => {
    cp = await startControlPlane();
    core = cp.kubeConfig().makeApiClient(CoreV1Api);
    for (const k of Object.keys(ns) as (keyof typeof ns)[]) ns[k] = await cp.createNamespace(k);
    // No kubelet serves ns.nonode: its Pods are never scheduled.
    kubelet = await startKubelet(cp, { namespaces: [ns.quota, ns.image, ns.runtime, ns.lost, ns.deadline], unpullableImages: (image) => image.startsWith('missing/') });
    sandbox = kubernetesSandbox({ kubeConfig: cp.kubeConfig(), settings: { image: 'test/sandbox:1', startTimeoutMs: 1_500, pollMs: 300, lostContactMs: 2_000 } });
  });

  afterAll(async () => {
    await sandbox?.close();
    await kubelet?.stop();
    await cp?.stop();
  });

  const noPodsLeft = (namespace: string) => waitFor(async () => (await core.listNamespacedPod({ namespace })).items.length === 0, { what: `no Pods left in ${namespace}` });

  it('answers degraded when a ResourceQuota forbids the Pod', async () => {
    await core.createNamespacedResourceQuota({ namespace: ns.quota, body: { metadata: { name: 'no-pods' }, spec: { hard: { pods: '0' } } } });
    const rq = await core.readNamespacedResourceQuota({ name: 'no-pods', namespace: ns.quota });
    // No controller-manager computes quota usage here: post it as the quota controller would.
    await core.replaceNamespacedResourceQuotaStatus({ name: 'no-pods', namespace: ns.quota, body: { ...rq, status: { hard: { pods: '0' }, used: { pods: '0' } } } });
    const result = await sandbox.exec(execRequest(testSession(ns.quota), 'echo should-not-run'));
    expect(result).toMatchObject({ status: 'degraded', exitCode: -1, output: '' });
    expect(result.reason).toMatch(/ResourceQuota refused creating the sandbox Pod/);
    expect(result.reason).toMatch(/exceeded quota: no-pods/);
    expect(result.reason).toMatch(/Retry after other sandboxes/);
  });

  it('answers degraded at once when the image cannot be pulled, and deletes the Pod', async () => {
    const result = await sandbox.exec(execRequest(testSession(ns.image), 'echo should-not-run', { pod: { image: 'missing/image:1' } }));
    expect(result).toMatchObject({ status: 'degraded', exitCode: -1, output: '' });
    expect(result.reason).toContain('The sandbox image missing/image:1 cannot be pulled (ErrImagePull');
    expect(result.reason).toContain('retrying will not help');
    await noPodsLeft(ns.image);
    // start() of a command that never starts returns with `done` already settled.
    const started = await sandbox.start(execRequest(testSession(ns.image), 'cat', { pod: { image: 'missing/image:2' }, stdin: 'x' })); // its cleanup takes a request
    let settled = false;
    void started.done.then(() => { settled = true; });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(true);
    expect((await started.done).status).toBe('degraded');
  });

  it('answers degraded when the RuntimeClass does not exist', async () => {
    const result = await sandbox.exec(execRequest(testSession(ns.runtime), 'true', { pod: { runtimeClassName: 'gvisor' } }));
    expect(result).toMatchObject({ status: 'degraded', exitCode: -1 });
    expect(result.reason).toMatch(/RuntimeClass "gvisor"/);
  });

  it('answers degraded when no node takes the Pod within the start timeout, and deletes it', async () => {
    const result = await sandbox.exec(execRequest(testSession(ns.nonode), 'echo should-not-run'));
    expect(result).toMatchObject({ status: 'degraded', exitCode: -1, output: '' });
    expect(result.reason).toMatch(/No node took the sandbox Pod within 2s/);
    await noPodsLeft(ns.nonode);
  });

  it('answers degraded when the apiserver is unreachable', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'gone', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
      users: [{ name: 'u', token: 'x' }], contexts: [{ name: 'c', cluster: 'gone', user: 'u' }], currentContext: 'c',
    });
    const unreachable = kubernetesSandbox({ kubeConfig: kc });
    const result = await unreachable.exec(execRequest(testSession('any'), 'true'));
    expect(result).toMatchObject({ status: 'degraded', exitCode: -1 });
    expect(result.reason).toMatch(/The Kubernetes API is unreachable .* Retry in a moment/);
  });

  it('answers degraded, not never, when the apiserver accepts connections but answers nothing', async () => {
    const held = new Set<Socket>();
    const blackhole = createServer((socket) => { held.add(socket); socket.on('error', () => undefined); });
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    try {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'hole', server: `https://127.0.0.1:${(blackhole.address() as { port: number }).port}`, skipTLSVerify: true }],
        users: [{ name: 'u', token: 'x' }], contexts: [{ name: 'c', cluster: 'hole', user: 'u' }], currentContext: 'c',
      });
      const hung = kubernetesSandbox({ kubeConfig: kc, settings: { apiTimeoutMs: 1_000 } });
      const result = await hung.exec(execRequest(testSession('any'), 'true'));
      expect(result).toMatchObject({ status: 'degraded', exitCode: -1 });
      expect(result.reason).toMatch(/unreachable \(no answer within 1s to ensuring ServiceAccount any\/hermes-sandbox\)/);
      // A /stop while it waits is answered at once, not after the request's timeout.
      const patient = kubernetesSandbox({ kubeConfig: kc, settings: { apiTimeoutMs: 120_000 } });
      const stop = new AbortController();
      const before = held.size;
      const pending = patient.exec(execRequest(testSession('other'), 'true', { signal: stop.signal }));
      await waitFor(() => held.size > before, { what: 'the second sandbox to wait on the apiserver' });
      stop.abort();
      expect(await pending).toMatchObject({ status: 'interrupted', reason: 'Stopped before the sandbox Pod was created.' });
    } finally {
      for (const s of held) s.destroy();
      blackhole.close();
    }
  });

  it('leaves a Pod its worker lost to its activeDeadlineSeconds, which ends it', async () => {
    // The worker reaches the apiserver through a proxy this test cuts: as if the worker died.
    const sockets = new Set<Socket>();
    const target = new URL(cp.server);
    const proxy = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const drop = () => { client.destroy(); upstream.destroy(); };
      client.on('error', drop); upstream.on('error', drop);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const admin = cp.kubeConfig();
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: admin.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${(proxy.address() as { port: number }).port}` })),
      users: admin.users, contexts: admin.contexts, currentContext: admin.currentContext,
    });
    // Deadline = timeout 2 s + start allowance 1 s.
    const doomed = kubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1', startTimeoutMs: 1_000, pollMs: 300, lostContactMs: 60_000 } });
    const running = await doomed.start(execRequest(testSession(ns.deadline), 'echo up; exec sleep 300', { timeoutMs: 2_000 }));
    await waitFor(() => running.output().text.includes('up'), { what: 'the command to start' });
    proxy.close();
    for (const s of sockets) s.destroy();
    const result = await running.done; // its own timer still answers; its delete cannot reach the apiserver
    expect(result.status).toBe('timeout');
    const [pod] = (await core.listNamespacedPod({ namespace: ns.deadline })).items;
    expect(pod?.spec?.activeDeadlineSeconds).toBe(3);
    const ended = await waitFor(async () => {
      const p = await core.readNamespacedPod({ name: pod!.metadata!.name!, namespace: ns.deadline });
      return p.status?.phase === 'Failed' ? p : undefined;
    }, { what: 'the kubelet to end the Pod at its deadline' });
    expect(ended.status?.reason).toBe('DeadlineExceeded');
    await core.deleteNamespacedPod({ name: pod!.metadata!.name!, namespace: ns.deadline });
  });

  it('reports a command cut off from the apiserver as possibly run, and never runs it again', async () => {
    const session = testSession(ns.lost);
    const running = await sandbox.start(execRequest(session, 'echo once >> /workspace/ran; echo started; sleep 6; echo finished'));
    await waitFor(() => running.output().text.includes('started'), { what: 'the command to start' });
    await cp.stopApiServer();
    let result;
    try {
      result = await running.done;
    } finally {
      await cp.startApiServer();
    }
    expect(result).toMatchObject({ status: 'degraded', exitCode: -1 });
    expect(result.reason).toContain('The command may have started: check /workspace before running it again.');
    // The kubelet finishes it; it ran exactly once.
    const ran = join(kubelet.stateDir, 'pvc', ns.lost, workspacePvcName(session.sessionId), 'ran');
    await waitFor(() => readFileSync(ran, 'utf8') === 'once\n', { what: 'the command to have run once' });
  });
});
