// Raw baselines of the mode-session benchmark, on the same apiserver and test kubelet as the
// sandboxes: a bare Pod created and watched until Running and Ready (what a cold sandbox's Pod
// needs at least), then a bare `pods/exec` of `true` into it (what any command needs at least),
// with nothing of ours or of agent-sandbox in between.
import { Writable } from 'node:stream';
import { CoreV1Api, Exec, Watch, type KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { BENCH_IMAGE } from './session-plane.js';

export interface RawSample {
  /** Create → the Pod Running and Ready (seen by a watch). */
  podReadyMs: number;
  /** Create → Ready → the first `pods/exec true` ended. */
  podReadyExecMs: number;
  /** A second `pods/exec true` into the same running Pod. */
  execMs: number;
}

const discard = (): Writable => new Writable({ write: (_c, _e, done) => done() });

/** One `pods/exec true`; resolves once the stream closed with a Success status. */
async function rawExec(kc: KubeConfig, namespace: string, pod: string): Promise<void> {
  let status: V1Status | undefined;
  const ws = await new Exec(kc).exec(namespace, pod, 'c', ['true'], discard(), discard(), null, false, (s) => { status = s; });
  await new Promise<void>((resolve) => {
    if (ws.readyState === 3) resolve(); // CLOSED
    ws.on('close', () => resolve());
    ws.on('error', () => resolve());
  });
  if (status?.status !== 'Success') throw new Error(`raw exec into ${namespace}/${pod} did not succeed: ${JSON.stringify(status)}`);
}

const stillStarting = (err: unknown): boolean => /Unexpected server response: 409/.test(String((err as Error).message));

/**
 * The first exec into a Pod just reported Running: the test kubelet writes Running as soon as it
 * has spawned bwrap, and answers 409 until the sandbox is set up (a few ms later), so it is
 * retried every 5 ms, as long as that takes (counted).
 */
async function firstExec(kc: KubeConfig, namespace: string, pod: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rawExec(kc, namespace, pod);
      return;
    } catch (err) {
      if (!stillStarting(err) || attempt >= 400) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

const runningAndReady = (pod: V1Pod): boolean =>
  pod.status?.phase === 'Running' && pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** Watches until the Pod is Running and Ready; the watch is open before the Pod is created. */
async function watchReady(kc: KubeConfig, namespace: string, name: string): Promise<{ ready: Promise<void>; abort: () => void }> {
  let done!: () => void;
  let fail!: (err: Error) => void;
  const ready = new Promise<void>((resolve, reject) => { done = resolve; fail = reject; });
  ready.catch(() => undefined); // a failure before it is awaited is still thrown where it is awaited
  const ctl = await new Watch(kc).watch(`/api/v1/namespaces/${namespace}/pods`, { fieldSelector: `metadata.name=${name}` },
    (_type: string, pod: V1Pod) => {
      if (runningAndReady(pod)) done();
      else if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') fail(new Error(`raw Pod ${name} ended ${pod.status.phase}`));
    }, (err: unknown) => { if (err) fail(err instanceof Error ? err : new Error(String(err))); });
  return { ready, abort: () => ctl.abort() };
}

/** One raw Pod: create → Running and Ready → exec `true` → exec `true` again; then deleted (not timed). */
export async function rawPodSample(kc: KubeConfig, namespace: string, name: string): Promise<RawSample> {
  const core = kc.makeApiClient(CoreV1Api);
  const watch = await watchReady(kc, namespace, name);
  const t0 = performance.now();
  try {
    await core.createNamespacedPod({ namespace, body: {
      metadata: { name },
      spec: { restartPolicy: 'Never', automountServiceAccountToken: false, containers: [{ name: 'c', image: BENCH_IMAGE, command: ['sleep', '3600'] }] },
    } });
    await watch.ready;
  } finally {
    watch.abort();
  }
  const podReadyMs = performance.now() - t0;
  await firstExec(kc, namespace, name);
  const podReadyExecMs = performance.now() - t0;
  const t1 = performance.now();
  await rawExec(kc, namespace, name);
  const execMs = performance.now() - t1;
  await core.deleteNamespacedPod({ name, namespace, body: { gracePeriodSeconds: 0 } });
  return { podReadyMs, podReadyExecMs, execMs };
}
