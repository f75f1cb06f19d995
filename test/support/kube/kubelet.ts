import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, makeInformer, type Informer, type KubeConfig, type V1Pod, type V1PodStatus } from '@kubernetes/client-node';
import { requireBubblewrap } from './binaries.js';
import type { ControlPlane } from './controlPlane.js';
import type { ExecLookup } from './execServer.js';
import { startKubeletServer } from './kubeletServer.js';
import { deleteNode, registerNode } from './node.js';
import { issueCert } from './pki.js';
import { startPodProcess, type ImageCommand, type PodProcess, type PodProcessOptions } from './podProcess.js';
import { affinityAllows } from './affinity.js';
import { failedToStartStatus, imagePullFailedStatus, runningStatus, terminatedStatus } from './podStatus.js';
import { childrenOf } from './podExec.js';
import { PodSpecError } from './podVolumes.js';
import { sandboxEnv } from './sandbox.js';
import { httpReadinessProbe, watchReadiness } from './readiness.js';
import { OWNER_FILE, ownerId } from './reaper.js';

/** Options for {@link startKubelet}. */
export interface KubeletOptions {
  /** @defaultValue `test-kubelet-<random>` */
  nodeName?: string;
  /** Bind pending pods only in these namespaces. @defaultValue every namespace */
  namespaces?: string[];
  /** Bind pending pods only when they match this label selector. @defaultValue every pod */
  labelSelector?: string;
  /**
   * Images this kubelet cannot pull: their Pods stay Pending with the container waiting in
   * `ErrImagePull`, as a real kubelet reports a missing image. @defaultValue none
   */
  unpullableImages?: (image: string) => boolean;
  /**
   * A folder kept across runs for pod logs, volumes and PVC stand-ins (the dev plane's
   * `.hermes/kube/kubelet`): created if missing, never removed. @defaultValue a temp folder,
   * removed by `stop()`
   */
  stateDir?: string;
  /**
   * Images run as local commands instead of the container's own `command` (which a Pod then
   * need not set), by exact image reference: e.g. the chart's runtime image → `node
   * <checkout>/bin/hermes.js`. @defaultValue none
   */
  images?: Record<string, ImageCommand>;
  /**
   * Mount each Pod's ServiceAccount token (TokenRequest, bound to the Pod) at
   * /var/run/secrets/kubernetes.io/serviceaccount with KUBERNETES_SERVICE_HOST/PORT, unless the
   * Pod sets `automountServiceAccountToken: false`, as a real kubelet does. @defaultValue false
   */
  serviceAccountTokens?: boolean;
  /**
   * How often an `httpGet` readiness probe of a host-network Pod is polled (readiness.ts); its
   * Ready condition follows the probe. @defaultValue 500
   */
  probePeriodMs?: number;
}

/** What the kubelet needs of a control plane: an admin client, and the CA to sign its serving cert. */
export type KubeletPlane = Pick<ControlPlane, 'kubeConfig' | 'pki'>;

/** A running test kubelet. */
export interface TestKubelet {
  nodeName: string;
  /** HTTPS port serving /containerLogs and /exec. */
  port: number;
  /** Folder of pod logs, volumes and PVC stand-ins (`pvc/<ns>/<claim>`); removed by `stop()` unless given as an option. */
  stateDir: string;
  /** Failures the kubelet hit while reconciling (also printed), for debugging tests. */
  errors: string[];
  /** The pods whose process runs now (`namespace/name`) and the host PIDs of their sandboxes. */
  running(): { pod: string; pid: number }[];
  /** Kills every pod process, stops watching, deletes the Node. */
  stop(): Promise<void>;
}

const isCode = (err: unknown, code: number): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;

const keyOf = (pod: V1Pod): string => `${pod.metadata?.namespace}/${pod.metadata?.name}`;

class Kubelet {
  readonly errors: string[] = [];
  private readonly running = new Map<string, PodProcess>();
  /** Last process per pod, kept after exit so logs of finished pods stay readable. */
  private readonly latest = new Map<string, PodProcess>();
  private readonly finishedUids = new Set<string>();
  private readonly queues = new Map<string, Promise<void>>();
  private readonly core: CoreV1Api;
  private informer?: Informer<V1Pod>;
  private stopped = false;

  constructor(private readonly kc: KubeConfig, readonly nodeName: string, readonly stateDir: string, private readonly opts: KubeletOptions,
    private readonly processOptions: PodProcessOptions = {}) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  async watch(): Promise<void> {
    const selector = this.opts.labelSelector;
    const informer = makeInformer<V1Pod>(this.kc, '/api/v1/pods',
      () => this.core.listPodForAllNamespaces(selector ? { labelSelector: selector } : {}), selector);
    informer.on('add', (pod) => this.enqueue(pod, () => this.reconcile(pod)));
    informer.on('update', (pod) => this.enqueue(pod, () => this.reconcile(pod)));
    informer.on('delete', (pod) => this.enqueue(pod, () => this.forget(pod)));
    informer.on('error', () => {
      // The watch broke (e.g. the apiserver restarted): start again, as client-go's reflector does.
      if (!this.stopped) setTimeout(() => { if (!this.stopped) void informer.start().catch(() => undefined); }, 500);
    });
    this.informer = informer;
    await informer.start();
  }

  /** Runs reconciles of one pod one at a time, in event order. */
  private enqueue(pod: V1Pod, work: () => Promise<void>): void {
    const key = keyOf(pod);
    const next = (this.queues.get(key) ?? Promise.resolve()).then(work).catch((err: unknown) => {
      const message = `Failed to reconcile Pod ${key}: ${err instanceof Error ? err.message : String(err)}`;
      this.errors.push(message);
      if (!this.stopped) console.warn(`[test-kubelet] ${message}`);
    });
    this.queues.set(key, next);
    void next.then(() => { if (this.queues.get(key) === next) this.queues.delete(key); });
  }

  private wants(pod: V1Pod): boolean {
    const namespaces = this.opts.namespaces;
    return (!namespaces || namespaces.includes(pod.metadata?.namespace ?? '')) && affinityAllows(pod, this.nodeName);
  }

  private async reconcile(pod: V1Pod): Promise<void> {
    if (this.stopped) return;
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) {
      if (this.wants(pod) && !pod.metadata?.deletionTimestamp) await this.bind(pod);
      return;
    }
    if (nodeName !== this.nodeName) return;
    if (pod.metadata?.deletionTimestamp) {
      await this.kill(pod, 'deleted');
      // As the real kubelet does once containers are gone: finish the graceful deletion.
      // With a body, the apiserver ignores query parameters: the grace period goes in the body.
      await this.core.deleteNamespacedPod({
        name: pod.metadata.name ?? '', namespace: pod.metadata.namespace ?? '',
        body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } },
      }).catch((err: unknown) => { if (!isCode(err, 404) && !isCode(err, 409)) throw err; });
      return;
    }
    const done = ['Succeeded', 'Failed'].includes(pod.status?.phase ?? '');
    if (done || this.running.has(keyOf(pod)) || this.finishedUids.has(pod.metadata?.uid ?? '')) return;
    if (pod.status?.phase === 'Running') {
      await this.lost(pod);
      return;
    }
    await this.start(pod);
  }

  /**
   * A Pod that runs on this Node by its status, but not by any process of ours: an earlier
   * kubelet process started it and is gone (the dev plane's node was stopped or crashed), and its
   * process died with it. As a real kubelet reports a container it can no longer find, it ends
   * Failed with ContainerStatusUnknown (exit 137) — never started a second time, since
   * restartPolicy Never means its command must not run twice.
   */
  private async lost(pod: V1Pod): Promise<void> {
    this.finishedUids.add(pod.metadata?.uid ?? '');
    const running = pod.status?.containerStatuses?.[0]?.state?.running;
    const now = new Date();
    await this.writeStatus(pod, (p) => terminatedStatus(p, p.status?.containerStatuses?.[0]?.containerID ?? '', {
      exitCode: 137, startedAt: running?.startedAt ? new Date(running.startedAt) : now, finishedAt: now,
      containerReason: 'ContainerStatusUnknown',
      containerMessage: 'The container could not be located when the pod was terminated (the test kubelet restarted)',
      podReason: 'ContainerStatusUnknown', podMessage: `The test kubelet ${this.nodeName} restarted while this Pod ran; its process is gone`,
    }));
  }

  private async bind(pod: V1Pod): Promise<void> {
    const name = pod.metadata?.name ?? '';
    await this.core.createNamespacedPodBinding({
      name, namespace: pod.metadata?.namespace ?? '',
      body: { metadata: { name }, target: { apiVersion: 'v1', kind: 'Node', name: this.nodeName } },
    }).catch((err: unknown) => { if (!isCode(err, 409)) throw err; });
  }

  private async start(pod: V1Pod): Promise<void> {
    const image = pod.spec?.containers[0]?.image ?? '';
    if (this.opts.unpullableImages?.(image)) {
      await this.writeStatus(pod, (p) => imagePullFailedStatus(p, image, new Date()));
      return;
    }
    let proc: PodProcess;
    try {
      proc = await startPodProcess(this.kc, pod, this.stateDir, this.processOptions);
    } catch (err) {
      if (!(err instanceof PodSpecError)) throw err;
      this.finishedUids.add(pod.metadata?.uid ?? '');
      await this.writeStatus(pod, (p) => failedToStartStatus(p, err.reason, err.message, new Date()));
      return;
    }
    this.running.set(keyOf(pod), proc);
    this.latest.set(keyOf(pod), proc);
    void proc.sandbox.exited.then((code) => this.enqueue(pod, () => this.finish(pod, proc, code)));
    const deadlineSeconds = pod.spec?.activeDeadlineSeconds;
    if (deadlineSeconds !== undefined) {
      const startTime = pod.status?.startTime ? new Date(pod.status.startTime).getTime() : proc.startedAt.getTime();
      const remaining = Math.max(0, startTime + deadlineSeconds * 1000 - Date.now());
      proc.deadline = setTimeout(() => this.enqueue(pod, () => this.kill(pod, 'deadline')), remaining);
    }
    const probe = pod.spec?.containers[0] ? httpReadinessProbe(pod.spec.containers[0], proc.spec.network) : undefined;
    await this.writeStatus(pod, (p) => runningStatus(p, proc.containerId, proc.startedAt, !probe));
    if (probe && !proc.finished) {
      proc.stopProbe = watchReadiness(probe, this.opts.probePeriodMs ?? 500, (ready) => this.enqueue(pod, async () => {
        if (!proc.finished) await this.writeStatus(pod, (p) => runningStatus(p, proc.containerId, proc.startedAt, ready));
      }));
    }
  }

  private async kill(pod: V1Pod, reason: NonNullable<PodProcess['stopReason']>): Promise<void> {
    const proc = this.running.get(keyOf(pod));
    if (!proc || proc.uid !== pod.metadata?.uid) return;
    proc.stopReason ??= reason;
    proc.sandbox.kill();
    await proc.sandbox.exited;
  }

  private async finish(pod: V1Pod, proc: PodProcess, exitCode: number): Promise<void> {
    proc.finished = true;
    clearTimeout(proc.deadline);
    proc.stopProbe?.();
    if (this.running.get(keyOf(pod)) === proc) this.running.delete(keyOf(pod));
    this.finishedUids.add(proc.uid);
    if (proc.stopReason === 'deleted' || proc.stopReason === 'shutdown') return;
    const deadline = proc.stopReason === 'deadline'
      ? { podReason: 'DeadlineExceeded', podMessage: 'Pod was active on the node longer than the specified deadline' }
      : {};
    await this.writeStatus(pod, (p) => terminatedStatus(p, proc.containerId, {
      exitCode, startedAt: proc.startedAt, finishedAt: new Date(), ...deadline,
    }));
  }

  /** A Pod that vanished (e.g. force-deleted) must not keep running. */
  private async forget(pod: V1Pod): Promise<void> {
    await this.kill(pod, 'deleted');
  }

  /** Read-modify-write of pods/status, retried on conflicts; gives up if the pod is gone or replaced. */
  private async writeStatus(pod: V1Pod, build: (latest: V1Pod) => V1PodStatus): Promise<void> {
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? '';
    for (let attempt = 0; attempt < 10 && !this.stopped; attempt++) {
      try {
        const latest = await this.core.readNamespacedPod({ name, namespace });
        if (latest.metadata?.uid !== pod.metadata?.uid) return;
        await this.core.replaceNamespacedPodStatus({ name, namespace, body: { ...latest, status: build(latest) } });
        return;
      } catch (err) {
        if (isCode(err, 404)) return;
        if (!isCode(err, 409)) throw err;
      }
    }
  }

  runningPods(): { pod: string; pid: number }[] {
    return [...this.running.entries()].map(([pod, proc]) => ({ pod, pid: proc.sandbox.pid }));
  }

  logFor(namespace: string, pod: string, container: string): PodProcess | undefined {
    const proc = this.latest.get(`${namespace}/${pod}`);
    return proc?.containerName === container ? proc : undefined;
  }

  /** Where to exec into a container: its running sandbox (see podExec.ts), or why there is none. */
  execFor: ExecLookup = (namespace, pod, container) => {
    const key = `${namespace}/${pod}`;
    const proc = this.running.get(key);
    if (!proc) {
      return this.latest.has(key)
        ? { ok: false, code: 409, message: `container ${container} of pod ${key} is not running: it has exited` }
        : { ok: false, code: 404, message: `pod ${key} does not run on this kubelet (${this.nodeName})` };
    }
    if (proc.containerName !== container) {
      return { ok: false, code: 404, message: `container ${container} of pod ${key} is not running: the test kubelet runs only the first container, ${proc.containerName}` };
    }
    // bwrap's child is the pod's pid 1; once it has forked the command, the sandbox is set up.
    const init = childrenOf(proc.sandbox.pid)[0];
    if (init === undefined || childrenOf(init).length === 0) {
      return { ok: false, code: 409, message: `container ${container} of pod ${key} is still starting; try again` };
    }
    return { ok: true, target: { pid: init, env: sandboxEnv(proc.spec), workingDir: proc.spec.workingDir } };
  };

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer?.stop();
    const procs = [...this.running.values()];
    for (const proc of procs) {
      proc.stopProbe?.();
      proc.stopReason ??= 'shutdown';
      proc.sandbox.kill();
    }
    await Promise.all(procs.map((p) => p.sandbox.exited));
  }
}

/**
 * Starts a test kubelet against `cp`: registers a Ready Node whose kubelet endpoint is this
 * process, binds matching pending Pods to it, runs each Pod's first container in bubblewrap,
 * writes Pod status as a kubelet would and serves their logs to the apiserver.
 */
export async function startKubelet(cp: KubeletPlane, opts: KubeletOptions = {}): Promise<TestKubelet> {
  const nodeName = opts.nodeName ?? `test-kubelet-${randomBytes(3).toString('hex')}`;
  requireBubblewrap();
  const kept = opts.stateDir !== undefined;
  const stateDir = kept ? opts.stateDir! : mkdtempSync(join(tmpdir(), 'hermes-kubelet-'));
  if (kept) mkdirSync(stateDir, { recursive: true });
  else writeFileSync(join(stateDir, OWNER_FILE), ownerId()); // the reaper removes it if we die before stop()
  const removeStateDir = (): void => { if (!kept) rmSync(stateDir, { recursive: true, force: true }); };
  process.once('exit', removeStateDir);
  const kc = cp.kubeConfig();
  const cluster = kc.getCurrentCluster();
  const kubelet = new Kubelet(kc, nodeName, stateDir, opts, {
    ...(opts.images ? { images: opts.images } : {}),
    ...(opts.serviceAccountTokens && cluster ? { serviceAccountTokens: { server: cluster.server, caFile: cp.pki.ca.cert } } : {}),
  });
  const tlsFiles = issueCert(cp.pki.dir, `kubelet-${nodeName}`, cp.pki.ca, `/CN=${nodeName}`, 'serverAuth', ['IP:127.0.0.1', `DNS:${nodeName}`]);
  const server = await startKubeletServer({ cert: readFileSync(tlsFiles.cert), key: readFileSync(tlsFiles.key) }, {
    log: (ns, pod, container) => {
      const proc = kubelet.logFor(ns, pod, container);
      return proc ? { file: proc.logFile, finished: () => proc.finished } : undefined;
    },
    exec: kubelet.execFor,
  });
  const port = server.port;
  await registerNode(kc, nodeName, port);
  await kubelet.watch();
  return {
    nodeName, port, stateDir, errors: kubelet.errors,
    running: () => kubelet.runningPods(),
    stop: async () => {
      await kubelet.stop();
      await server.close();
      await deleteNode(kc, nodeName);
      removeStateDir();
      process.off('exit', removeStateDir);
    },
  };
}
