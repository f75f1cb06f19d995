// Must precede @kubernetes/client-node: it does not load on Node 20 without these patches.
import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import {
  NETWORK_ANNOTATION, pidsWithArg, startControlPlane, startKubelet, waitFor,
  type ControlPlane, type TestKubelet,
} from '../../support/kube/index.js';

const pod = (name: string, command: string[], extra: Partial<NonNullable<V1Pod['spec']>> = {}, annotations: Record<string, string> = {}): V1Pod => ({
  metadata: { name, annotations },
  spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox', command }], ...extra },
});

describe('test kubelet behind a real kube-apiserver', () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let core: CoreV1Api;

  beforeAll(async () => {
    cp = await startControlPlane();
    kubelet = await startKubelet(cp);
    core = cp.kubeConfig().makeApiClient(CoreV1Api);
  });

  afterAll(async () => {
    await kubelet?.stop();
    await cp?.stop();
  });

  const phaseOf = (ns: string, name: string, phases: string[]) => async () => {
    const p = await core.readNamespacedPod({ name, namespace: ns });
    return phases.includes(p.status?.phase ?? '') ? p : undefined;
  };

  it('registers a Ready Node that serves kubelet endpoints on 127.0.0.1', async () => {
    const node = await core.readNode({ name: kubelet.nodeName });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(kubelet.port);
    expect(node.status?.addresses).toContainEqual({ type: 'InternalIP', address: '127.0.0.1' });
  });

  it('binds and runs a pod, and reports its exit code and logs through the apiserver', async () => {
    const ns = await cp.createNamespace('run');
    const script = 'echo "hello from $GREETING in $(pwd)"; echo to-stderr >&2; echo kept > /data/out; cat /data/out; exit 3';
    await core.createNamespacedPod({ namespace: ns, body: pod('fails', ['sh', '-c', script], {
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', script], workingDir: '/work',
        env: [{ name: 'GREETING', value: 'kube' }], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    }) });
    const done = await waitFor(phaseOf(ns, 'fails', ['Succeeded', 'Failed']), { what: 'pod fails to finish' });
    expect(done.status?.phase).toBe('Failed');
    expect(done.spec?.nodeName).toBe(kubelet.nodeName);
    const terminated = done.status?.containerStatuses?.[0]?.state?.terminated;
    expect(terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(terminated?.finishedAt).toBeDefined();

    const viaClient = await core.readNamespacedPodLog({ name: 'fails', namespace: ns });
    expect(viaClient).toContain('hello from kube in /work');
    expect(viaClient).toContain('to-stderr');
    expect(viaClient).toContain('kept');
    const viaKubectl = await cp.kubectl(['logs', '-n', ns, 'fails']);
    expect(viaKubectl.code, viaKubectl.stderr).toBe(0);
    expect(viaKubectl.stdout).toBe(viaClient);
  });

  it('marks a pod that exits 0 Succeeded/Completed', async () => {
    const ns = await cp.createNamespace('ok');
    await core.createNamespacedPod({ namespace: ns, body: pod('ok', ['true']) });
    const done = await waitFor(phaseOf(ns, 'ok', ['Succeeded', 'Failed']), { what: 'pod ok to finish' });
    expect(done.status?.phase).toBe('Succeeded');
    expect(done.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
  });

  it('isolates the network unless the pod asks for it', async () => {
    const ns = await cp.createNamespace('net');
    const listIfaces = ['sh', '-c', "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"];
    await core.createNamespacedPod({ namespace: ns, body: pod('isolated', listIfaces) });
    await core.createNamespacedPod({ namespace: ns, body: pod('host', listIfaces, {}, { [NETWORK_ANNOTATION]: 'host' }) });
    await waitFor(phaseOf(ns, 'isolated', ['Succeeded']), { what: 'isolated pod to succeed' });
    await waitFor(phaseOf(ns, 'host', ['Succeeded']), { what: 'host-network pod to succeed' });
    const isolated = await core.readNamespacedPodLog({ name: 'isolated', namespace: ns });
    const host = await core.readNamespacedPodLog({ name: 'host', namespace: ns });
    expect(isolated.trim().split('\n')).toEqual(['lo']);
    expect(host.trim().split('\n').length).toBeGreaterThan(1);
  });

  it('follows the logs of a running pod until it ends', async () => {
    const ns = await cp.createNamespace('follow');
    await core.createNamespacedPod({ namespace: ns, body: pod('ticker', ['sh', '-c', 'for i in 1 2 3 4 5; do echo line-$i; sleep 0.3; done']) });
    await waitFor(phaseOf(ns, 'ticker', ['Running', 'Succeeded']), { what: 'ticker to start' });
    const followed = await cp.kubectl(['logs', '-f', '-n', ns, 'ticker']);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toBe('line-1\nline-2\nline-3\nline-4\nline-5\n');
  });

  it('kills a pod that outlives activeDeadlineSeconds and marks it DeadlineExceeded', async () => {
    const ns = await cp.createNamespace('deadline');
    const marker = `100.${randomInt(1e6, 1e7)}`;
    await core.createNamespacedPod({ namespace: ns, body: pod('slow', ['sleep', marker], { activeDeadlineSeconds: 2 }) });
    const done = await waitFor(phaseOf(ns, 'slow', ['Succeeded', 'Failed']), { what: 'slow pod to end', timeoutMs: 45_000 });
    expect(done.status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    expect(done.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(137);
    await waitFor(() => pidsWithArg(marker).length === 0, { what: `sleep ${marker} to be killed` });
  });

  it('kills the process of a running pod when the pod is deleted', async () => {
    const ns = await cp.createNamespace('delete');
    const marker = `100.${randomInt(1e6, 1e7)}`;
    await core.createNamespacedPod({ namespace: ns, body: pod('victim', ['sleep', marker]) });
    await waitFor(phaseOf(ns, 'victim', ['Running']), { what: 'victim to run' });
    await waitFor(() => pidsWithArg(marker).length > 0, { what: `a host process running sleep ${marker}` });
    await core.deleteNamespacedPod({ name: 'victim', namespace: ns });
    await waitFor(async () => {
      const list = await core.listNamespacedPod({ namespace: ns });
      return list.items.length === 0;
    }, { what: 'victim to be gone from the apiserver' });
    await waitFor(() => pidsWithArg(marker).length === 0, { what: `sleep ${marker} to be killed` });
  });

  it('shares a PVC stand-in folder between pods of the same claim', async () => {
    const ns = await cp.createNamespace('pvc');
    const withClaim = (name: string, script: string): V1Pod => pod(name, ['sh', '-c', script], {
      volumes: [{ name: 'ws', persistentVolumeClaim: { claimName: 'workspace' } }],
      containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', script], volumeMounts: [{ name: 'ws', mountPath: '/workspace' }] }],
    });
    await core.createNamespacedPod({ namespace: ns, body: withClaim('writer', 'echo persisted > /workspace/note') });
    await waitFor(phaseOf(ns, 'writer', ['Succeeded']), { what: 'writer to succeed' });
    await core.createNamespacedPod({ namespace: ns, body: withClaim('reader', 'cat /workspace/note') });
    await waitFor(phaseOf(ns, 'reader', ['Succeeded']), { what: 'reader to succeed' });
    expect(await core.readNamespacedPodLog({ name: 'reader', namespace: ns })).toBe('persisted\n');
  });

  it('resolves env from Secrets, ConfigMaps and the Pod\'s fields, and fails a Pod whose Secret is missing', async () => {
    const ns = await cp.createNamespace('env');
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'creds' }, stringData: { TOKEN: 's3cret' } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'settings' }, data: { MODE: 'fast', LEVEL: 'debug' } } });
    await core.createNamespacedPod({ namespace: ns, body: pod('env', ['sh', '-c', 'echo "$TOKEN $MODE $POD $NS $CFG_LEVEL $URL $MISSING."'], {
      containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'echo "$TOKEN $MODE $POD $NS $CFG_LEVEL $URL $MISSING."'],
        envFrom: [{ configMapRef: { name: 'settings' }, prefix: 'CFG_' }],
        env: [
          { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'creds', key: 'TOKEN' } } },
          { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'MODE' } } },
          { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          { name: 'URL', value: 'http://$(POD):80' },
          { name: 'MISSING', valueFrom: { secretKeyRef: { name: 'nope', key: 'X', optional: true } } },
        ] }],
    }) });
    await waitFor(phaseOf(ns, 'env', ['Succeeded']), { what: 'env pod to succeed' });
    expect(await core.readNamespacedPodLog({ name: 'env', namespace: ns })).toBe(`s3cret fast env ${ns} debug http://env:80 .\n`);

    await core.createNamespacedPod({ namespace: ns, body: pod('nosecret', ['true'], {
      containers: [{ name: 'main', image: 'busybox', command: ['true'], env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'absent', key: 'T' } } }] }],
    }) });
    const failed = await waitFor(phaseOf(ns, 'nosecret', ['Failed']), { what: 'pod without its Secret to fail' });
    expect(failed.status?.reason).toBe('CreateContainerConfigError');
    expect(failed.status?.message).toBe('secret "absent" not found');
  });

  it('keeps a host-network Pod with an httpGet readiness probe not Ready until it serves', async () => {
    const ns = await cp.createNamespace('ready');
    const port = await new Promise<number>((resolve) => { const srv = createServer(); srv.listen(0, '127.0.0.1', () => { const p = (srv.address() as { port: number }).port; srv.close(() => resolve(p)); }); });
    const script = `sleep 2; exec python3 -m http.server ${port} --bind 127.0.0.1`;
    await core.createNamespacedPod({ namespace: ns, body: pod('web', ['sh', '-c', script], {
      containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', script], ports: [{ name: 'http', containerPort: port }],
        readinessProbe: { httpGet: { path: '/', port: 'http' } } }],
    }, { [NETWORK_ANNOTATION]: 'host' }) });
    const ready = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    const notYet = await waitFor(phaseOf(ns, 'web', ['Running']), { what: 'web pod to run' });
    expect(ready(notYet)).toBe('False');
    await waitFor(async () => { const p = await core.readNamespacedPod({ name: 'web', namespace: ns }); return ready(p) === 'True' ? p : undefined; }, { what: 'web pod to be Ready' });
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
    await core.deleteNamespacedPod({ name: 'web', namespace: ns });
  });
});
