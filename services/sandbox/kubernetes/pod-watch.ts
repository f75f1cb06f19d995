// Follows one Pod: a watch on its name (events within milliseconds) and, beside it, a poll (a
// watch the apiserver broke, or that never started, cannot hang a call). Callers wait for a
// condition on the latest Pod; `lostContactMs` without any answer from the apiserver ends the
// wait with a failure.
import { CoreV1Api, Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { apiCode, apiFailure, bounded, type SandboxFailure } from './failures.js';

export class PodWatch {
  latest?: V1Pod;
  /** True once the apiserver says the Pod does not exist (deleted behind our back). */
  gone = false;
  private lastContact = Date.now();
  private lastError?: unknown;
  private closed = false;
  private watchAbort?: AbortController;
  private pollTimer?: NodeJS.Timeout;
  private readonly listeners = new Set<() => void>();
  private readonly core: CoreV1Api;

  constructor(private readonly kc: KubeConfig, readonly namespace: string, readonly name: string, private readonly pollMs: number) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  start(created: V1Pod): void {
    this.update(created);
    void this.watch(created.metadata?.resourceVersion);
    // Each tick re-checks the waiters (a hung apiserver answers nothing, yet silence must count) and polls.
    this.pollTimer = setInterval(() => { this.notify(); void this.poll(); }, this.pollMs);
  }

  private update(pod: V1Pod): void {
    this.lastContact = Date.now();
    const rv = (p?: V1Pod) => Number(p?.metadata?.resourceVersion ?? 0);
    if (!this.latest || rv(pod) >= rv(this.latest)) this.latest = pod;
    this.notify();
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }

  private watchFailures = 0;

  /** (Re)starts the watch: after a clean end from the last version seen, after an error from now, backing off. */
  private async watch(resourceVersion?: string): Promise<void> {
    if (this.closed) return;
    const query: Record<string, string | boolean> = { fieldSelector: `metadata.name=${this.name}`, allowWatchBookmarks: false };
    if (resourceVersion) query.resourceVersion = resourceVersion;
    const again = (err: unknown) => {
      if (this.closed) return;
      this.watchFailures = err ? this.watchFailures + 1 : 0;
      const delay = Math.min(200 * 2 ** this.watchFailures, 5_000);
      // An error may be 410 Gone (the version is too old): start from now; the poll covers the gap.
      setTimeout(() => void this.watch(err ? undefined : this.latest?.metadata?.resourceVersion), delay);
    };
    try {
      this.watchAbort = await new Watch(this.kc).watch(`/api/v1/namespaces/${this.namespace}/pods`, query,
        (type: string, obj: V1Pod) => {
          if (type === 'DELETED') { this.gone = true; this.lastContact = Date.now(); this.notify(); return; }
          if (type === 'ADDED' || type === 'MODIFIED') this.update(obj);
        },
        (err: unknown) => again(err));
    } catch (err) {
      again(err ?? new Error('watch failed'));
    }
  }

  private polling = false;

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      this.update(await bounded(this.core.readNamespacedPod({ name: this.name, namespace: this.namespace }), 10_000, `reading Pod ${this.namespace}/${this.name}`));
    } catch (err) {
      if (apiCode(err) === 404) { this.gone = true; this.lastContact = Date.now(); this.notify(); return; }
      this.lastError = err;
      this.notify();
    } finally {
      this.polling = false;
    }
  }

  /** Milliseconds since the apiserver last answered about this Pod. */
  silenceMs(): number {
    return Date.now() - this.lastContact;
  }

  lastFailure(doing: string, mayHaveRun: boolean): SandboxFailure {
    return apiFailure(this.lastError ?? new Error('no answer'), doing, mayHaveRun);
  }

  /** Resolves with `check`'s first non-undefined answer, re-checked on every change (and every poll). */
  until<T>(check: () => T | undefined, signal: AbortSignal): Promise<T | 'aborted'> {
    return new Promise((resolve) => {
      const finish = (v: T | 'aborted') => { this.listeners.delete(listener); signal.removeEventListener('abort', onAbort); resolve(v); };
      const listener = () => { const v = check(); if (v !== undefined) finish(v); };
      const onAbort = () => finish('aborted');
      if (signal.aborted) return finish('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
      this.listeners.add(listener);
      listener();
    });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.pollTimer);
    this.watchAbort?.abort();
    this.notify();
  }
}
