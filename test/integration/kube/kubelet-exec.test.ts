// pods/exec through the real kube-apiserver into Pods run by the test kubelet: client-node's
// Exec (WebSocket v5), a raw v4 client, and kubectl exec.
import { randomInt } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, Exec, type KubeConfig, type V1Container, type V1Pod, type V1PodSpec, type V1Status } from '@kubernetes/client-node';
import { WebSocket } from 'ws';
import { pidsWithArg, startControlPlane, startKubelet, waitFor, type ControlPlane, type TestKubelet } from '../../support/kube/index.js';
import { bytesOf } from '../../support/kube/execStream.js';

interface ExecResult { stdout: string; stderr: string; status: V1Status | undefined }

/** A Writable that keeps what it is given. */
function sink(): Writable & { text(): string } {
  const chunks: Buffer[] = [];
  const w = new Writable({ write(chunk: Buffer, _enc, cb) { chunks.push(chunk); cb(); } });
  return Object.assign(w, { text: () => Buffer.concat(chunks).toString('utf8') });
}

/** Runs `command` in ns/pod via client-node's Exec; resolves when the socket closes. */
async function execIn(kc: KubeConfig, ns: string, pod: string, command: string[], input?: string): Promise<ExecResult> {
  const stdout = sink();
  const stderr = sink();
  const stdin = input === undefined ? null : new PassThrough();
  let status: V1Status | undefined;
  const ws = await new Exec(kc).exec(ns, pod, 'main', command, stdout, stderr, stdin, false, (s) => { status = s; });
  if (stdin) stdin.end(input);
  await new Promise((resolve) => ws.on('close', resolve));
  return { stdout: stdout.text(), stderr: stderr.text(), status };
}

/** A unique number to tell one test's processes from every other's in /proc. */
const marker = (): string => String(100_000 + randomInt(800_000));

/** A pod that writes ./written and /tmp/t, then sleeps `sleepFor` (its marker) until deleted. */
const sleeper = (name: string, sleepFor: string, container: Partial<V1Container> = {}, spec: Partial<V1PodSpec> = {}): V1Pod => ({
  metadata: { name },
  spec: {
    restartPolicy: 'Never', ...spec,
    containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', `echo from-pod > ./written; echo in-tmp > /tmp/t; exec sleep ${sleepFor}`], ...container }],
  },
});

describe('pods/exec into test-kubelet Pods through a real kube-apiserver', () => {
  let cp: ControlPlane;
  let kubelet: TestKubelet;
  let core: CoreV1Api;
  let kc: KubeConfig;

  beforeAll(async () => {
    cp = await startControlPlane();
    kubelet = await startKubelet(cp);
    kc = cp.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
  });

  afterAll(async () => {
    await kubelet?.stop();
    await cp?.stop();
  });

  /** Creates a pod and waits until the file its command writes exists (so it is set up). */
  async function runningPod(ns: string, body: V1Pod): Promise<void> {
    await core.createNamespacedPod({ namespace: ns, body });
    const name = body.metadata?.name ?? '';
    await waitFor(async () => (await core.readNamespacedPod({ name, namespace: ns })).status?.phase === 'Running', { what: `pod ${name} to run` });
    await waitFor(async () => (await execIn(kc, ns, name, ['cat', '/tmp/t']).catch(() => undefined))?.stdout === 'in-tmp\n', { what: `pod ${name} to write /tmp/t` });
  }

  it('declares ExtendWebSocketsToKubelet on its Node, and the apiserver keeps it', async () => {
    const out = await cp.kubectl(['get', 'node', kubelet.nodeName, '-o', 'jsonpath={.status.declaredFeatures}']);
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toContain('ExtendWebSocketsToKubelet');
  });

  it('streams stdout and stderr apart and reports exit 0 as Success', async () => {
    const ns = await cp.createNamespace('exec-out');
    await runningPod(ns, sleeper('p', marker()));
    const result = await execIn(kc, ns, 'p', ['sh', '-c', 'echo to-out; echo to-err >&2; echo more-out']);
    expect(result.stdout).toBe('to-out\nmore-out\n');
    expect(result.stderr).toBe('to-err\n');
    expect(result.status).toMatchObject({ status: 'Success' });
  });

  it('reports a non-zero exit code in the error channel (client-node and kubectl)', async () => {
    const ns = await cp.createNamespace('exec-code');
    await runningPod(ns, sleeper('p', marker()));
    const result = await execIn(kc, ns, 'p', ['sh', '-c', 'echo before; exit 7']);
    expect(result.stdout).toBe('before\n');
    expect(result.status).toMatchObject({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '7' }] } });

    const kubectl = await cp.kubectl(['exec', '-n', ns, 'p', '--', 'sh', '-c', 'echo via-kubectl; echo oops >&2; exit 4']);
    expect(kubectl.code).toBe(4);
    expect(kubectl.stdout).toBe('via-kubectl\n');
    expect(kubectl.stderr).toContain('oops');
  });

  it('pipes stdin in and closes it (v5), for client-node and kubectl exec -i', async () => {
    const ns = await cp.createNamespace('exec-stdin');
    await runningPod(ns, sleeper('p', marker()));
    // cat and wc end only when stdin is closed.
    const result = await execIn(kc, ns, 'p', ['sh', '-c', 'cat; echo; wc -l < /dev/null'], 'line one\nline two\n');
    expect(result.stdout).toBe('line one\nline two\n\n0\n');
    const counted = await execIn(kc, ns, 'p', ['wc', '-l'], 'a\nb\nc\n');
    expect(counted.stdout.trim()).toBe('3');

    const kubectl = await cp.kubectl(['exec', '-i', '-n', ns, 'p', '--', 'tr', 'a-z', 'A-Z'], { input: 'shout\n' });
    expect(kubectl.code, kubectl.stderr).toBe(0);
    expect(kubectl.stdout).toBe('SHOUT\n');
  });

  it("runs inside the pod: its files, private /tmp, volumes, processes, env and working dir", async () => {
    const ns = await cp.createNamespace('exec-inside');
    const main = marker();
    await runningPod(ns, sleeper('p', main, {
      workingDir: '/workspace',
      env: [{ name: 'GREETING', value: 'from-spec' }],
      volumeMounts: [{ name: 'data', mountPath: '/data' }],
    }, { volumes: [{ name: 'data', emptyDir: {} }] }));
    const script = 'cat /workspace/written /tmp/t; pwd; echo "$GREETING $HOSTNAME"; echo via-exec > /data/x; ' +
      'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done';
    const result = await execIn(kc, ns, 'p', ['sh', '-c', script]);
    expect(result.status?.status, result.stderr).toBe('Success');
    const lines = result.stdout.split('\n');
    // /tmp is a tmpfs private to the pod's sandbox: seeing in-tmp means the same mount namespace.
    expect(lines.slice(0, 4)).toEqual(['from-pod', 'in-tmp', '/workspace', 'from-spec p']);
    // The pod's main process is visible: the exec shares its pid namespace.
    expect(lines).toContain(`sleep ${main} `);
    // What exec writes to a volume, the pod's own process sees.
    const seen = await execIn(kc, ns, 'p', ['cat', '/data/x']);
    expect(seen.stdout).toBe('via-exec\n');
    const env = await cp.kubectl(['exec', '-n', ns, 'p', '--', 'printenv', 'GREETING']);
    expect(env.stdout).toBe('from-spec\n');
  });

  it('speaks v4.channel.k8s.io to older clients', async () => {
    const ns = await cp.createNamespace('exec-v4');
    await runningPod(ns, sleeper('p', marker()));
    const opts = {};
    await kc.applyToHTTPSOptions(opts);
    const server = kc.getCurrentCluster()?.server.replace(/^https/, 'wss') ?? '';
    const ws = new WebSocket(`${server}/api/v1/namespaces/${ns}/pods/p/exec?command=sh&command=-c&command=echo%20v4%3B%20exit%202&stdout=true&stderr=true`,
      ['v4.channel.k8s.io'], opts);
    const frames: Buffer[] = [];
    ws.on('message', (data) => frames.push(bytesOf(data)));
    await new Promise((resolve) => ws.on('close', resolve));
    expect(ws.protocol).toBe('v4.channel.k8s.io');
    const stdout = Buffer.concat(frames.filter((f) => f[0] === 1).map((f) => f.subarray(1))).toString();
    expect(stdout).toBe('v4\n');
    const status = frames.find((f) => f[0] === 3 && f.length > 1);
    expect(JSON.parse(status?.subarray(1).toString() ?? '{}')).toMatchObject({ reason: 'NonZeroExitCode', details: { causes: [{ message: '2' }] } });
  });

  it('refuses exec into a pod whose container has finished, and into a deleted pod', async () => {
    const ns = await cp.createNamespace('exec-done');
    await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'done' }, spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox', command: ['true'] }] } } });
    await waitFor(async () => (await core.readNamespacedPod({ name: 'done', namespace: ns })).status?.phase === 'Succeeded', { what: 'pod done to succeed' });
    // The apiserver does not check the phase: this is the kubelet's 409.
    await expect(execIn(kc, ns, 'done', ['true'])).rejects.toThrow(/409/);
    await core.deleteNamespacedPod({ name: 'done', namespace: ns });
    await waitFor(async () => core.readNamespacedPod({ name: 'done', namespace: ns }).then(() => false, () => true), { what: 'pod done to be gone' });
    await expect(execIn(kc, ns, 'done', ['true'])).rejects.toThrow(/404/);
  });

  it('kills the exec\'d process when the client disconnects, and leaves the pod running', async () => {
    const ns = await cp.createNamespace('exec-hangup');
    const main = marker();
    await runningPod(ns, sleeper('p', main));
    const execd = marker();
    const ws = await new Exec(kc).exec(ns, 'p', 'main', ['sh', '-c', `sleep ${execd}; echo never`], sink(), sink(), null, false);
    await waitFor(() => pidsWithArg(execd).length > 0, { what: `sleep ${execd} to start` });
    ws.close();
    await waitFor(() => pidsWithArg(execd).length === 0, { what: `sleep ${execd} to be killed` });
    expect(pidsWithArg(main)).toHaveLength(1);
    expect((await execIn(kc, ns, 'p', ['echo', 'still-here'])).stdout).toBe('still-here\n');
  });

  it('kills exec\'d processes when the pod is deleted, ending the exec', async () => {
    const ns = await cp.createNamespace('exec-delete');
    await runningPod(ns, sleeper('p', marker()));
    const execd = marker();
    const running = execIn(kc, ns, 'p', ['sleep', execd]);
    await waitFor(() => pidsWithArg(execd).length > 0, { what: `sleep ${execd} to start` });
    await core.deleteNamespacedPod({ name: 'p', namespace: ns });
    const result = await running;
    expect(result.status).toMatchObject({ status: 'Failure', details: { causes: [{ message: '137' }] } });
    expect(pidsWithArg(execd)).toEqual([]);
  });
});
