// `npm run bench:operator` / `make bench-operator`: the operator at scale — 1000 Agents and 1000
// Skills (BENCH_SCALE scales it) on a real kube-apiserver and Postgres. Prints the time to
// converge (every object Ready), the no-op resync cost, and ratios against raw baselines measured
// in the same run: creating ConfigMaps on the same apiserver, and publishing the same compiled
// revisions straight to Postgres.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { createLogger, openDb, publishRevision, type Db } from '../services/core/index.js';
import { compileAgent, staticConfigMaps, type Agent, type Profile } from '../operator/index.js';
import { startOperator } from '../operator/manager.js';
import { startControlPlane, waitFor, type ControlPlane } from '../test/support/kube/index.js';
import { createTestDatabase } from '../test/support/services.js';

const progress = (s: string) => process.stderr.write(`[bench:operator] ${s}\n`);
const scale = Number(process.env.BENCH_SCALE ?? '1');
const N = Math.max(10, Math.round(1000 * scale));
const concurrency = 16;
const group = 'hermes.dev';
const version = 'v1alpha1';

async function pool<T>(items: T[], fn: (item: T) => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  let i = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (i < items.length) await fn(items[i++]!);
  }));
  return (performance.now() - t0) / 1000;
}

const seq = (n: number) => Array.from({ length: n }, (_, i) => i);

async function baselinePublish(db: Db, ns: string): Promise<number> {
  const profile: Profile = { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p', namespace: ns }, spec: { model: { provider: 'openai', model: 'm' }, fallbackModels: [], persona: '' } };
  const lookup = { secrets: { value: async () => 'v' }, configMaps: staticConfigMaps([]) };
  return pool(seq(N), async (i) => {
    const agent: Agent = { apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: `raw-${i}`, namespace: ns },
      spec: { profileRef: { name: 'p' }, api: { enabled: true, keys: [] }, platforms: [], admins: [], skills: { enabled: true }, busyPolicy: 'interrupt', runtime: { mode: 'shared' } } };
    await publishRevision(db, await compileAgent(agent, profile, lookup));
  });
}

async function readyCount(cp: ControlPlane, ns: string, plural: string): Promise<number> {
  const list = await cp.kubeConfig().makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ group, version, plural, namespace: ns }) as { items: { status?: { conditions?: { type: string; status: string }[] } }[] };
  return list.items.filter((o) => o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
}

async function main(): Promise<void> {
  progress(`starting kube-apiserver and a fresh database (N = ${N})…`);
  const cp = await startControlPlane();
  const testDb = await createTestDatabase();
  const db = openDb(testDb.url, { max: 20 });
  try {
    const applied = await cp.kubectl(['apply', '-f', new URL('../crds/', import.meta.url).pathname]);
    if (applied.code !== 0) throw new Error(applied.stderr);
    await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=hermes']);
    const ns = await cp.createNamespace('bench');
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    const custom = cp.kubeConfig().makeApiClient(CustomObjectsApi);
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'model-key' }, stringData: { k: 'v' } } });

    progress('baseline: ConfigMap creates on the same apiserver…');
    const cmSecs = await pool(seq(N), (i) => core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `cm-${i}` }, data: { v: String(i) } } }));
    progress('baseline: compile + publishRevision straight to Postgres…');
    const pubSecs = await baselinePublish(db, `raw-${ns}`);

    progress(`creating ${N} Agents and ${N} Skills…`);
    await custom.createNamespacedCustomObject({ group, version, plural: 'profiles', namespace: ns, body: { apiVersion: `${group}/${version}`, kind: 'Profile', metadata: { name: 'p' },
      spec: { model: { provider: 'openai', model: 'm', apiKey: { secretKeyRef: { name: 'model-key', key: 'k' } } } } } });
    const createSecs = await pool(seq(N), async (i) => {
      await custom.createNamespacedCustomObject({ group, version, plural: 'agents', namespace: ns, body: { apiVersion: `${group}/${version}`, kind: 'Agent', metadata: { name: `a-${i}` }, spec: { profileRef: { name: 'p' } } } });
      await custom.createNamespacedCustomObject({ group, version, plural: 'skills', namespace: ns, body: { apiVersion: `${group}/${version}`, kind: 'Skill', metadata: { name: `s-${i}` },
        spec: { name: `skill-${i}`, description: `Skill number ${i}.`, body: `# Skill ${i}\n1. Do step ${i}.` } } });
    });

    progress('starting the operator; waiting for every object to be Ready…');
    const t0 = performance.now();
    const op = await startOperator({ kc: cp.kubeConfig(), db, log: createLogger('operator', 'warn'), leaderElection: false, namespace: ns, resyncMs: 0 });
    await waitFor(async () => (await readyCount(cp, ns, 'agents')) === N && (await readyCount(cp, ns, 'skills')) === N,
      { what: 'all Agents and Skills Ready', timeoutMs: 30 * 60_000, intervalMs: 1_000 });
    const convergeSecs = (performance.now() - t0) / 1000;

    progress('no-op resync of everything…');
    const before = op.reconciles();
    const rvBefore = JSON.stringify((await custom.listNamespacedCustomObject({ group, version, plural: 'agents', namespace: ns }) as { items: { metadata: { resourceVersion: string } }[] }).items.map((o) => o.metadata.resourceVersion));
    const t1 = performance.now();
    op.caches.agents.resync();
    op.caches.skills.resync();
    await waitFor(() => op.reconciles().agent! >= before.agent! + N && op.reconciles().skill! >= before.skill! + N, { what: 'the resync', timeoutMs: 10 * 60_000, intervalMs: 50 });
    const resyncSecs = (performance.now() - t1) / 1000;
    const rvAfter = JSON.stringify((await custom.listNamespacedCustomObject({ group, version, plural: 'agents', namespace: ns }) as { items: { metadata: { resourceVersion: string } }[] }).items.map((o) => o.metadata.resourceVersion));
    await op.stop();

    const rate = (n: number, s: number) => `${(n / s).toFixed(0)}/s`;
    const rows: [string, string][] = [
      [`baseline: ConfigMap create (${N}, c=${concurrency})`, rate(N, cmSecs)],
      [`baseline: compile + publishRevision to Postgres (${N}, c=${concurrency})`, rate(N, pubSecs)],
      [`create ${N} Agents + ${N} Skills (c=${concurrency})`, rate(2 * N, createSecs)],
      [`operator: converge ${2 * N} objects to Ready`, `${convergeSecs.toFixed(1)} s (${rate(2 * N, convergeSecs)})`],
      [`operator: no-op resync of ${2 * N} objects`, `${resyncSecs.toFixed(2)} s (${rate(2 * N, resyncSecs)}), status writes: ${rvBefore === rvAfter ? 0 : 'SOME (bug)'}`],
      ['ratio: converge rate / ConfigMap create rate', (2 * N / convergeSecs / (N / cmSecs)).toFixed(2)],
      ['ratio: Agent converge rate / raw publish rate', ((N / convergeSecs) / (N / pubSecs)).toFixed(2)],
    ];
    console.log('\nOperator at scale (same run, same machine)');
    for (const [k, v] of rows) console.log(`  ${k.padEnd(64)} ${v}`);
  } finally {
    await db.close();
    await testDb.drop();
    await cp.stop();
  }
}

await main();
