// One sandbox Pod's life: create → wait until its container runs → follow its log → exit code
// from the container status → delete. The Pod is deleted however the call ends (at once, grace
// 1 s, on abort or timeout). A failure before the container ran is `degraded`; after it ran,
// losing the apiserver is `degraded` too, saying the command may have run — never retried here.
import { CoreV1Api, type KubeConfig, type V1ContainerStatus, type V1Pod } from '@kubernetes/client-node';
import { apiCode, apiFailure, bounded, isHopelessWaiting, SandboxFailure, waitingFailure } from './failures.js';
import { LogCollector } from './pod-log-collector.js';
import { CONTAINER_NAME } from './pod-spec.js';
import { PodWatch } from './pod-watch.js';

/** Exit codes reported when the backend ended the command: SIGKILL at the timeout, SIGTERM on abort. */
export const TIMEOUT_EXIT_CODE = 137;
export const INTERRUPTED_EXIT_CODE = 143;

export type PodOutcome =
  | { status: 'ok' | 'timeout' | 'interrupted'; exitCode: number; reason?: string }
  | { status: 'degraded'; exitCode: -1; reason: string };

export interface PodRunOptions {
  kc: KubeConfig;
  pod: V1Pod;
  timeoutMs: number;
  startTimeoutMs: number;
  pollMs: number;
  lostContactMs: number;
  apiTimeoutMs: number;
  signal: AbortSignal;
  onOutput: (text: string) => void;
  /** The Pod was bound to a Node (to pin the session's later Pods there). */
  onBound?: (node: string) => void;
  /** The Pod exists (e.g. to make it the owner of its stdin ConfigMap). */
  onCreated?: (pod: V1Pod) => Promise<void>;
}

const containerOf = (pod: V1Pod | undefined): V1ContainerStatus | undefined =>
  pod?.status?.containerStatuses?.find((s) => s.name === CONTAINER_NAME);

const hasStarted = (pod: V1Pod | undefined): boolean => {
  const state = containerOf(pod)?.state;
  return !!state?.running || !!state?.terminated;
};

/** Why the Pod will never run its container, or undefined while it still may. */
function startFailure(pod: V1Pod | undefined, image: string): SandboxFailure | undefined {
  const waiting = containerOf(pod)?.state?.waiting;
  if (waiting && isHopelessWaiting(waiting.reason)) return waitingFailure(image, waiting.reason ?? '', waiting.message);
  if (pod?.status?.phase === 'Failed' && !hasStarted(pod)) {
    const why = [pod.status.reason, pod.status.message ?? waiting?.message].filter(Boolean).join(': ') || 'no reason given';
    return new SandboxFailure(`The sandbox Pod failed before its command started (${why}). Retry in a moment; if it fails again the cluster or the Profile's spec.sandbox needs fixing.`);
  }
  return undefined;
}

function waitingText(pod: V1Pod): string {
  const waiting = containerOf(pod)?.state?.waiting;
  return waiting ? ` (${waiting.reason ?? 'waiting'}${waiting.message ? `: ${waiting.message}` : ''})` : '';
}

function notStartedInTime(pod: V1Pod | undefined, startTimeoutMs: number): SandboxFailure {
  const scheduled = pod?.status?.conditions?.find((c) => c.type === 'PodScheduled');
  const seconds = Math.round(startTimeoutMs / 1000);
  if (!pod?.spec?.nodeName) {
    const why = scheduled?.status === 'False' ? ` (${scheduled.reason ?? 'Unschedulable'}: ${scheduled.message ?? 'no message'})` : '';
    return new SandboxFailure(`No node took the sandbox Pod within ${seconds}s${why}. Retry in a minute, or lower spec.sandbox.resources.`);
  }
  return new SandboxFailure(`The sandbox container on node ${pod.spec.nodeName} did not start within ${seconds}s${waitingText(pod)}. Retry in a minute.`);
}

/** A Pod that ended without its container's end (evicted, its Node lost), except at its deadline. */
function endedEarly(pod: V1Pod | undefined): SandboxFailure | undefined {
  const phase = pod?.status?.phase;
  if ((phase !== 'Failed' && phase !== 'Succeeded') || pod?.status?.reason === 'DeadlineExceeded') return undefined;
  const why = [pod?.status?.reason, pod?.status?.message].filter(Boolean).join(': ') || phase;
  return new SandboxFailure(`The sandbox Pod ended while the command ran (${why}). The command may not have finished: check /workspace before running it again.`);
}

export class PodRun {
  /** Settles true once the container runs, false when it never will. */
  readonly running: Promise<boolean>;
  readonly done: Promise<PodOutcome>;
  private setRunning!: (v: boolean) => void;
  private readonly core: CoreV1Api;
  private readonly name: string;
  private readonly namespace: string;
  private deleted?: Promise<void>;

  constructor(private readonly o: PodRunOptions) {
    this.core = o.kc.makeApiClient(CoreV1Api);
    this.name = o.pod.metadata?.name ?? '';
    this.namespace = o.pod.metadata?.namespace ?? '';
    this.running = new Promise((resolve) => { this.setRunning = resolve; });
    this.done = this.run().finally(() => this.setRunning(false));
  }

  private degraded(err: unknown, doing: string, mayHaveRun: boolean): PodOutcome {
    return { status: 'degraded', exitCode: -1, reason: apiFailure(err, doing, mayHaveRun).reason };
  }

  private async run(): Promise<PodOutcome> {
    let created: V1Pod;
    try {
      created = await bounded(this.core.createNamespacedPod({ namespace: this.namespace, body: this.o.pod }), this.o.apiTimeoutMs, 'creating the sandbox Pod');
    } catch (err) {
      // Without an answer the Pod may exist: delete it by name (it can only have just started).
      if (apiCode(err) === undefined) await this.delete(0);
      return this.degraded(err, `creating the sandbox Pod in namespace ${this.namespace}`, apiCode(err) === undefined);
    }
    const watch = new PodWatch(this.o.kc, this.namespace, this.name, this.o.pollMs);
    try {
      await bounded(this.o.onCreated?.(created) ?? Promise.resolve(), this.o.apiTimeoutMs, 'owning the stdin ConfigMap').catch(() => undefined);
      watch.start(created);
      return await this.lifecycle(watch);
    } finally {
      watch.close();
      await this.delete(hasStarted(watch.latest) && containerOf(watch.latest)?.state?.terminated ? 0 : 1);
    }
  }

  private async lifecycle(watch: PodWatch): Promise<PodOutcome> {
    const image = this.o.pod.spec?.containers[0]?.image ?? '';
    const startDeadline = AbortSignal.timeout(this.o.startTimeoutMs);
    const started = await watch.until<'started' | SandboxFailure>(() => {
      if (hasStarted(watch.latest)) return 'started';
      if (watch.gone) return new SandboxFailure('The sandbox Pod was deleted before its command started (by someone else). Retry.');
      if (watch.silenceMs() > this.o.lostContactMs) return watch.lastFailure('waiting for the sandbox Pod to start', false);
      return startFailure(watch.latest, image) ?? (startDeadline.aborted ? notStartedInTime(watch.latest, this.o.startTimeoutMs) : undefined);
    }, AbortSignal.any([this.o.signal, startDeadline]));
    if (started === 'aborted' && startDeadline.aborted && !this.o.signal.aborted) {
      return { status: 'degraded', exitCode: -1, reason: notStartedInTime(watch.latest, this.o.startTimeoutMs).reason };
    }
    if (started === 'aborted') {
      await this.delete(1);
      return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: 'Stopped before the command started.' };
    }
    if (started instanceof SandboxFailure) return { status: 'degraded', exitCode: -1, reason: started.reason };
    const node = watch.latest?.spec?.nodeName;
    if (node) this.o.onBound?.(node);
    this.setRunning(true);
    return this.follow(watch);
  }

  private async follow(watch: PodWatch): Promise<PodOutcome> {
    const logs = new LogCollector(this.o.kc, { namespace: this.namespace, pod: this.name, container: CONTAINER_NAME }, this.o.onOutput);
    logs.start();
    const timeout = AbortSignal.timeout(this.o.timeoutMs);
    const end = await watch.until<'terminated' | SandboxFailure>(() => {
      if (containerOf(watch.latest)?.state?.terminated) return 'terminated';
      if (watch.gone) return new SandboxFailure('The sandbox Pod was deleted while the command ran (by someone else). The command may not have finished: check /workspace before running it again.');
      const early = endedEarly(watch.latest);
      if (early) return early;
      if (watch.silenceMs() > this.o.lostContactMs) return watch.lastFailure('following the running command', true);
      return undefined;
    }, AbortSignal.any([this.o.signal, timeout]));
    if (end === 'terminated') {
      await logs.finish(5_000);
      const terminated = containerOf(watch.latest)?.state?.terminated;
      const exitCode = terminated?.exitCode ?? -1;
      if (watch.latest?.status?.reason === 'DeadlineExceeded') {
        return { status: 'timeout', exitCode: exitCode > 0 ? exitCode : TIMEOUT_EXIT_CODE, reason: 'The Pod passed its activeDeadlineSeconds.' };
      }
      if (terminated?.reason === 'OOMKilled') {
        return { status: 'ok', exitCode, reason: 'OOMKilled: the command used more memory than the sandbox limit (spec.sandbox.resources.limits.memory).' };
      }
      return { status: 'ok', exitCode };
    }
    await this.delete(1);
    await logs.stop(300);
    if (end instanceof SandboxFailure) return { status: 'degraded', exitCode: -1, reason: end.reason };
    if (this.o.signal.aborted) return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: 'Stopped: the sandbox Pod was deleted.' };
    return { status: 'timeout', exitCode: TIMEOUT_EXIT_CODE, reason: `The command ran past its ${Math.round(this.o.timeoutMs / 1000)}s timeout; the sandbox Pod was deleted.` };
  }

  /** Deletes the Pod once (later calls wait for the first); errors are left to the hygiene controller. */
  private delete(graceSeconds: number): Promise<void> {
    this.deleted ??= bounded(this.core.deleteNamespacedPod({
      name: this.name, namespace: this.namespace, body: { gracePeriodSeconds: graceSeconds, propagationPolicy: 'Background' },
    }), this.o.apiTimeoutMs, 'deleting the sandbox Pod').then(() => undefined, () => undefined);
    return this.deleted;
  }
}
