// A watched cache of one resource: client-node's informer (list, then watch from the list's
// resourceVersion), restarted with backoff when the watch breaks (a restart watches again from
// the last resourceVersion seen, or relists when that is too old, so changes missed meanwhile are
// seen), plus a periodic resync that re-announces every cached object so a lost event or a failed
// side effect outside Kubernetes is eventually corrected.
//
// A watch is also restarted after a while however quiet it is (`watchTimeoutMs`, jittered, as
// client-go's watch timeout): client-node's watch has no client-side deadline, so a path that
// goes silent without closing (a load balancer or node that vanished while the kernel's keepalive
// still gets answers) would otherwise leave the cache stale until the apiserver's own request
// timeout (30–60 min), if its close ever arrives.
import { makeInformer, type Informer, type KubeConfig, type KubernetesListObject, type KubernetesObject, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from '../../services/core/index.js';
import { ItemBackoff } from './backoff.js';
import { kubeErrorLine } from '../../services/sandbox/index.js';

/** Options for {@link WatchedCache}. */
export interface WatchedCacheOptions<T extends KubernetesObject> {
  kc: KubeConfig;
  /** API path to watch, e.g. `/apis/hermes.dev/v1alpha1/agents` or `/api/v1/namespaces/x/secrets`. */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
  /** Called for every add, update and delete, and for every cached object on resync. */
  onChange: (obj: T) => void;
  log: Logger;
  /** What is watched, for logs. */
  what: string;
  /** @defaultValue 300_000 ms (0 disables) */
  resyncMs?: number;
  /** A watch is restarted after this long plus up to as much again at random. @defaultValue 300_000 ms (0 disables) */
  watchTimeoutMs?: number;
  /** How long a (re)start may take before it counts as failed and is retried. @defaultValue 30_000 ms */
  startTimeoutMs?: number;
  /** Watch only objects with these labels (pass the same selector to `list`). */
  labelSelector?: string;
}

/** The error a watch request reports when it was aborted on purpose (node-fetch's AbortError). */
const isAbort = (err: unknown): boolean => (err as { name?: unknown } | null)?.name === 'AbortError';

export class WatchedCache<T extends KubernetesObject> {
  private readonly informer: Informer<T> & ObjectCache<T>;
  private readonly backoff = new ItemBackoff<string>({ baseMs: 200, maxMs: 30_000 });
  private stopped = false;
  private synced = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  /** A renewal is stopping the old watch and starting a new one: the old one's abort is no break. */
  private renewing = false;
  /** Times the watch was restarted after it broke; for tests and metrics. */
  restarts = 0;
  /** Times a quiet watch was restarted on its timeout; for tests and metrics. */
  renewals = 0;

  constructor(private readonly opts: WatchedCacheOptions<T>) {
    this.informer = makeInformer<T>(opts.kc, opts.path, opts.list, opts.labelSelector);
    for (const verb of ['add', 'update', 'delete'] as const) this.informer.on(verb, (obj) => opts.onChange(obj));
    this.informer.on('error', (err) => {
      // The informer reports the abort of the watch a renewal stopped as an error; restarting on it
      // aborted the new watch, whose abort was reported in turn: every watch restarted every 30 s for
      // good, never synced again.
      if (this.renewing && isAbort(err)) return;
      this.restartLater(err);
    });
  }

  async start(): Promise<void> {
    // A start that gets no answer is retried like a broken watch (the informer reports other failures itself).
    await this.startOnce().catch((e: unknown) => this.restartLater(e));
    const every = this.opts.resyncMs ?? 300_000;
    if (every > 0) {
      this.resyncTimer = setInterval(() => this.resync(), every);
      this.resyncTimer.unref();
    }
  }

  private async startOnce(): Promise<void> {
    // The informer's start has no deadline of its own (a silent path holds it for ever).
    const timeoutMs = this.opts.startTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`watching ${this.opts.what}: no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.informer.start(), late]);
    } finally {
      clearTimeout(timer);
    }
    // The informer reports a failed list or watch to its error handler and still resolves start():
    // a restart is then already scheduled, and this start did not work — the backoff must grow
    // (forgetting it here restarted every watch 5 times a second, a warning each, all outage long).
    if (this.restartTimer) return;
    this.synced = true;
    this.backoff.forget('watch');
    this.renewLater();
  }

  /** Restarts the watch after its timeout, jittered: a watch that went silent is replaced. */
  private renewLater(): void {
    const base = this.opts.watchTimeoutMs ?? 300_000;
    clearTimeout(this.renewTimer);
    if (base <= 0 || this.stopped) return;
    this.renewTimer = setTimeout(() => {
      this.renewTimer = undefined;
      if (this.stopped || this.restartTimer) return;
      this.renewals++;
      this.renewing = true;
      void this.informer.stop().then(() => (this.stopped ? undefined : this.startOnce()))
        .catch((e: unknown) => this.restartLater(e))
        .finally(() => { this.renewing = false; });
    }, base * (1 + Math.random()));
    this.renewTimer.unref();
  }

  private restartLater(err: unknown): void {
    if (this.stopped || this.restartTimer) return;
    // Not synced until a start works again: /readyz says so while the apiserver cannot be reached.
    this.synced = false;
    const ms = this.backoff.next('watch');
    this.opts.log.warn({ err: kubeErrorLine(err), resource: this.opts.what, retryMs: ms }, 'Watch broke; relisting after backoff');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopped) return;
      this.restarts++;
      this.startOnce().catch((e: unknown) => this.restartLater(e));
    }, ms);
    this.restartTimer.unref();
  }

  /** Re-announces every cached object. */
  resync(): void {
    for (const obj of this.informer.list()) this.opts.onChange(obj);
  }

  /** Listed and watching: false before the first list and from a broken watch until it is watched again. */
  hasSynced(): boolean {
    return this.synced;
  }

  get(name: string, namespace?: string): T | undefined {
    return this.informer.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.informer.list(namespace);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    clearTimeout(this.renewTimer);
    clearInterval(this.resyncTimer);
    await this.informer.stop();
  }
}
