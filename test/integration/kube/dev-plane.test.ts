// `make dev K8S=1`'s control plane runs a node: hack/kube/dev-env.sh up starts etcd, the
// kube-apiserver and devNode.ts (the test kubelet, the garbage collector and the agent-sandbox
// controller), so Pods really run; `hermes dev --k8s` with examples/coder runs a terminal call
// in a sandbox Pod there; `down` stops all of it; a Pod that was running when the node stopped
// is reported lost at the next start, never run a second time.
// The plane lives in a temp folder on free ports; the test's run mark is passed down, so the
// reaper ends it even if this file dies before `down`.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeTools, repoRoot } from '../../support/kube/binaries.js';
import { loadKubeConfig } from '../../support/kube/kubeconfig.js';
import { freePort } from '../../support/ports.js';
import { markEnv, processGone } from '../../support/kube/reaper.js';
import { waitFor } from '../../support/kube/wait.js';
import { cleanEnv, run } from '../harness/run.js';
import { lastUser, startFakeOpenAI, type ChatRequestBody } from '../../support/fake-openai.js';
import { messageApi } from '../../support/message-api.js';
import { createTestDatabase, eventually, serverUrls } from '../../support/services.js';

const NODE = 'hermes-dev-node';
/** Plain Pods go here: `hermes dev --k8s` makes `default` a restricted sandbox namespace. */
const PLAIN = 'plain';
let state: string;
let env: NodeJS.ProcessEnv;
let kc: KubeConfig;
let core: CoreV1Api;

const devEnv = (command: 'up' | 'down') => run('bash', [join(repoRoot, 'hack/kube/dev-env.sh'), command], { cwd: state, env });
const pidOf = (name: string): number => Number(readFileSync(join(state, `${name}.pid`), 'utf8'));

async function up(): Promise<void> {
  const result = await devEnv('up');
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout.trim()).toBe(`export KUBECONFIG=${join(state, 'admin.kubeconfig')}`);
  expect(result.stderr).toContain('[kube] node: ready');
}

const pod = (name: string, script: string): V1Pod => ({
  metadata: { name },
  spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', script] }] },
});

async function podStatus(namespace: string, name: string) {
  return (await core.readNamespacedPod({ name, namespace })).status;
}

beforeAll(async () => {
  state = mkdtempSync(join(tmpdir(), 'hermes-devplane-'));
  const etcdPort = await freePort();
  env = cleanEnv({
    HERMES_KUBE_DEV_DIR: state, HERMES_KUBE_PORT: String(await freePort()), HERMES_ETCD_PORT: String(etcdPort),
    ...markEnv(), ...(process.env.HERMES_TEST_RUN ? { HERMES_TEST_RUN: process.env.HERMES_TEST_RUN } : {}),
  });
  await up();
  kc = loadKubeConfig(join(state, 'admin.kubeconfig'));
  core = kc.makeApiClient(CoreV1Api);
}, 240_000);

afterAll(async () => {
  if (state) {
    await devEnv('down');
    rmSync(state, { recursive: true, force: true });
  }
}, 60_000);

describe('make dev K8S=1: the dev plane runs a node', () => {
  it('registers a Ready Node whose kubelet runs Pods: phase, exit code and logs through the apiserver', async () => {
    const node = await core.readNode({ name: NODE });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    // A namespace of its own gets its `default` ServiceAccount from the controller, as in a cluster.
    await core.createNamespace({ body: { metadata: { name: PLAIN } } });
    await waitFor(async () => (await core.readNamespacedServiceAccount({ name: 'default', namespace: PLAIN }).catch(() => undefined)) !== undefined,
      { what: `ServiceAccount ${PLAIN}/default` });
    await core.createNamespacedPod({ namespace: PLAIN, body: pod('hello', 'echo hello from the dev node; exit 3') });
    await waitFor(async () => (await podStatus(PLAIN, 'hello'))?.phase === 'Failed', { what: 'pod hello to end', timeoutMs: 30_000 });
    const status = await podStatus(PLAIN, 'hello');
    expect(status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3);
    expect(await core.readNamespacedPodLog({ name: 'hello', namespace: PLAIN })).toBe('hello from the dev node\n');
  });

  it('runs the agent-sandbox controller (its CRDs served) and the garbage collector beside the kubelet', async () => {
    const crds = await run(kubeTools().kubectl, ['--kubeconfig', join(state, 'admin.kubeconfig'), 'get', 'crd', '-o', 'name'], { cwd: state, env });
    expect(crds.stdout).toContain('sandboxclaims.extensions.agents.x-k8s.io');
    expect(crds.stdout).toContain('sandboxwarmpools.extensions.agents.x-k8s.io');
    // The collector deletes a dependent whose owner is gone (what deletes a claim's Sandbox and Pod).
    const owner = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'owner' } } });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'dependent', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid! }] } },
    });
    await core.deleteNamespacedConfigMap({ name: 'owner', namespace: 'default' });
    await waitFor(async () => (await core.readNamespacedConfigMap({ name: 'dependent', namespace: 'default' }).catch(() => undefined)) === undefined,
      { what: 'the garbage collector to delete the dependent', timeoutMs: 60_000 });
  });

  it('hermes dev --k8s with examples/coder: a terminal call runs in a sandbox Pod on the dev node, the namespace prepared for it', async () => {
    // The model runs `hostname` (the test kubelet names a Pod's host after the Pod), then repeats what it printed.
    const model = await startFakeOpenAI((b: ChatRequestBody) => {
      const result = b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user')).find((m) => m.role === 'tool')?.content;
      if (result !== undefined) return { text: `the sandbox said: ${result}` };
      return lastUser(b) === 'where do you run?' ? { toolCalls: [{ id: 't1', name: 'terminal', arguments: JSON.stringify({ command: 'hostname; pwd' }) }] } : { text: 'ok' };
    });
    const database = await createTestDatabase();
    const port = await freePort();
    const dev = spawn(process.execPath, [join(repoRoot, 'bin/hermes.js'), 'dev', '--k8s', '-m', join(repoRoot, 'examples/coder'), '-p', String(port)], {
      cwd: state,
      env: {
        PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: join(state, 'admin.kubeconfig'),
        DATABASE_URL: database.url, REDIS_URL: serverUrls().redisUrl, HERMES_QUEUE_PREFIX: `devplane-${port}`,
        OPENAI_BASE_URL: model.baseURL, HERMES_DEV_API_KEY: 'hk-devplane', HERMES_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    dev.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const exited = new Promise<number | null>((resolve) => dev.once('exit', resolve));
    try {
      await eventually(() => stderr.includes('Hermes is running'), `hermes dev --k8s to start (stderr so far: ${stderr.slice(-2_000)})`, 120_000, 200);
      // The banner is written a line at a time.
      await eventually(() => stderr.includes('sandboxes:'), 'the banner\'s sandboxes line', 10_000);
      expect(stderr).toContain('sandboxes:      one Pod per command on the dev cluster');
      // What the chart does for a sandbox namespace, done for the Agent's: restricted, and the ServiceAccount without a token.
      const ns = await core.readNamespace({ name: 'default' });
      expect(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
      expect((await core.readNamespacedServiceAccount({ name: 'hermes-sandbox', namespace: 'default' })).automountServiceAccountToken).toBe(false);

      const api = messageApi(() => `http://127.0.0.1:${port}`, { authorization: 'Bearer hk-devplane', 'content-type': 'application/json' });
      const reply = await api.replyOf(await api.post('coder', 'where do you run?'));
      expect(reply).toMatch(/the sandbox said: .*hermes-sandbox-[0-9a-f]{12}/s);
      expect(reply).toContain('/workspace');
      // The session's workspace is a PVC, held by the dev node's kubelet between calls.
      const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: 'default' })).items.map((c) => c.metadata?.name);
      expect(claims.some((name) => name?.startsWith('hermes-workspace-'))).toBe(true);
      expect(readdirSync(join(state, 'kubelet', 'pvc', 'default')).some((name) => name.startsWith('hermes-workspace-'))).toBe(true);
      // The Agent says where its commands run.
      await eventually(async () => {
        const agent = await run(kubeTools().kubectl, ['--kubeconfig', join(state, 'admin.kubeconfig'), 'get', 'agents.hermes.dev', 'coder', '-n', 'default', '-o',
          'jsonpath={.status.conditions[?(@.type=="SandboxReady")].status}/{.status.conditions[?(@.type=="SandboxReady")].reason}'], { cwd: state, env });
        return agent.stdout === 'True/PodPerCall' ? true : undefined;
      }, 'the Agent\'s SandboxReady condition to say PodPerCall', 30_000, 250);
    } finally {
      dev.kill('SIGTERM');
      await exited;
      await model.close();
      await database.drop();
    }
  }, 180_000);

  it('down stops every process; a Pod running then is reported lost at the next up, never run again', async () => {
    await core.createNamespacedPod({ namespace: PLAIN, body: pod('long', 'echo started; sleep 600') });
    await waitFor(async () => (await podStatus(PLAIN, 'long'))?.phase === 'Running', { what: 'pod long to run', timeoutMs: 30_000 });
    await waitFor(async () => (await core.readNamespacedPodLog({ name: 'long', namespace: PLAIN })).includes('started'), { what: 'pod long to start its command' });
    const pids = ['node', 'kube-apiserver', 'etcd'].map(pidOf);

    const down = await devEnv('down');
    expect(down.code, down.stderr).toBe(0);
    for (const pid of pids) expect(processGone(pid)).toBe(true);
    expect(existsSync(join(state, 'node.ready'))).toBe(false);

    await up();
    kc = loadKubeConfig(join(state, 'admin.kubeconfig'));
    core = kc.makeApiClient(CoreV1Api);
    // Straight from Running to Failed: started again, `sleep 600` would keep it Running.
    await waitFor(async () => (await podStatus(PLAIN, 'long'))?.phase === 'Failed', { what: 'the lost pod to be reported', timeoutMs: 30_000 });
    const status = await podStatus(PLAIN, 'long');
    expect(status?.reason).toBe('ContainerStatusUnknown');
    expect(status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({ exitCode: 137, reason: 'ContainerStatusUnknown' });
    // A new Pod runs on the restarted node.
    await core.createNamespacedPod({ namespace: PLAIN, body: pod('again', 'true') });
    await waitFor(async () => (await podStatus(PLAIN, 'again'))?.phase === 'Succeeded', { what: 'pod again to succeed', timeoutMs: 30_000 });
  });
});
