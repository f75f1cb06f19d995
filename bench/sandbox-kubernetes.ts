// `npm run bench:sandbox-kubernetes` / `make bench-sandbox-kubernetes`: per-call overhead of the
// kubernetes sandbox backend on an empty command (`true`), next to the raw Pod
// create → Succeeded → delete on the same apiserver and test kubelet, measured in the same run.
// The backend's call adds the workspace PVC refresh, the Node check, the log read and the
// last-used stamp; the raw loop only creates, watches and deletes.
import { randomUUID } from 'node:crypto';
import { CoreV1Api, Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { kubernetesSandbox } from '../services/sandbox/index.js';
import { startControlPlane, startKubelet } from '../test/support/kube/index.js';

const progress = (s: string) => process.stderr.write(`[bench:sandbox-kubernetes] ${s}\n`);
const N = Math.max(5, Math.round(30 * Number(process.env.BENCH_SCALE ?? '1')));

const stats = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { median: at(0.5), p95: at(0.95), mean: s.reduce((a, b) => a + b, 0) / s.length };
};

/** One raw Pod: create, watch until Succeeded, delete (grace 0). */
async function rawPod(kc: KubeConfig, core: CoreV1Api, namespace: string, name: string): Promise<number> {
  const t0 = performance.now();
  let done!: () => void;
  const succeeded = new Promise<void>((resolve) => { done = resolve; });
  const ctl = await new Watch(kc).watch(`/api/v1/namespaces/${namespace}/pods`, { fieldSelector: `metadata.name=${name}` },
    (_t: string, pod: V1Pod) => { if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') done(); }, () => undefined);
  await core.createNamespacedPod({ namespace, body: {
    metadata: { name },
    spec: { restartPolicy: 'Never', automountServiceAccountToken: false, containers: [{ name: 'c', image: 'test/sandbox:1', command: ['/bin/sh', '-c', 'true'] }] },
  } });
  await succeeded;
  ctl.abort();
  await core.deleteNamespacedPod({ name, namespace, body: { gracePeriodSeconds: 0 } });
  return performance.now() - t0;
}

async function main(): Promise<void> {
  progress('starting etcd, kube-apiserver and the test kubelet…');
  const cp = await startControlPlane();
  const kubelet = await startKubelet(cp);
  try {
    const kc = cp.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const ns = await cp.createNamespace('bench');
    const sandbox = kubernetesSandbox({ kubeConfig: kc, settings: { image: 'test/sandbox:1' } });
    const session = { namespace: ns, agent: 'bench', sessionId: randomUUID(), admissionId: randomUUID() };
    const request = () => ({
      session: { ...session, admissionId: randomUUID() }, workspace: { size: '1Gi', ttlSeconds: 3600 }, command: 'true',
      timeoutMs: 30_000, signal: new AbortController().signal, network: { egress: 'none' as const, allow: [] }, maxOutputChars: 10_000,
    });
    progress('warm-up (ServiceAccount, NetworkPolicy, workspace PVC on the first call)…');
    const first = performance.now();
    const warm = await sandbox.exec(request());
    const firstMs = performance.now() - first;
    if (warm.status !== 'ok') throw new Error(`warm-up call failed: ${JSON.stringify(warm)}`);
    await rawPod(kc, core, ns, 'raw-warmup');
    const raw: number[] = [];
    const backend: number[] = [];
    progress(`${N} calls each, interleaved…`);
    for (let i = 0; i < N; i++) {
      raw.push(await rawPod(kc, core, ns, `raw-${i}`));
      const t0 = performance.now();
      const r = await sandbox.exec(request());
      backend.push(performance.now() - t0);
      if (r.status !== 'ok' || r.exitCode !== 0) throw new Error(`call ${i} failed: ${JSON.stringify(r)}`);
    }
    await sandbox.close();
    const a = stats(raw);
    const b = stats(backend);
    const f = (n: number) => n.toFixed(0).padStart(6);
    console.log(`\nkubernetes sandbox, empty command (\`true\`), ${N} calls each, 1 at a time, same apiserver and test kubelet`);
    console.log('                                        median    p95   mean  (ms)');
    console.log(`raw Pod create → Succeeded → delete    ${f(a.median)} ${f(a.p95)} ${f(a.mean)}`);
    console.log(`backend exec (Pod per call)            ${f(b.median)} ${f(b.p95)} ${f(b.mean)}`);
    console.log(`first call of a session (SA, policy, PVC) ${firstMs.toFixed(0)} ms`);
    console.log(`overhead: +${(b.median - a.median).toFixed(0)} ms median; ratio backend/raw ${(b.median / a.median).toFixed(2)}× (median), ${(b.mean / a.mean).toFixed(2)}× (mean)`);
  } finally {
    await kubelet.stop();
    await cp.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
