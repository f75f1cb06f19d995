// A watched cache of one resource: client-node's informer (list, then watch from the list's
// resourceVersion), restarted with backoff when the watch breaks (a restart relists, so changes
// missed meanwhile are seen), plus a periodic resync that re-announces every cached object so a
// lost event or a failed side effect outside Kubernetes is eventually corrected.
import { makeInformer, type Informer, type KubeConfig, type KubernetesListObject, type KubernetesObject, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from '../../services/core/index.js';
import { ItemBackoff } from './backoff.js';

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
  /** Watch only objects with these labels (pass the same selector to `list`). */
  labelSelector?: string;
}

export class WatchedCache<T extends KubernetesObject> {
  private readonly informer: Informer<T> & ObjectCache<T>;
  private readonly backoff = new ItemBackoff<string>({ baseMs: 200, maxMs: 30_000 });
  private stopped = false;
  private synced = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  /** Times the cache (re)listed after a broken watch; for tests and metrics. */
  restarts = 0;

  constructor(private readonly opts: WatchedCacheOptions<T>) {
    this.informer = makeInformer<T>(opts.kc, opts.path, opts.list, opts.labelSelector);
    for (const verb of ['add', 'update', 'delete'] as const) this.informer.on(verb, (obj) => opts.onChange(obj));
    this.informer.on('error', (err) => this.restartLater(err));
  }

  async start(): Promise<void> {
    await this.startOnce();
    const every = this.opts.resyncMs ?? 300_000;
    if (every > 0) {
      this.resyncTimer = setInterval(() => this.resync(), every);
      this.resyncTimer.unref();
    }
  }

  private async startOnce(): Promise<void> {
    await this.informer.start();
    this.synced = true;
    this.backoff.forget('watch');
  }

  private restartLater(err: unknown): void {
    if (this.stopped || this.restartTimer) return;
    const ms = this.backoff.next('watch');
    this.opts.log.warn({ err: String(err), resource: this.opts.what, retryMs: ms }, 'Watch broke; relisting after backoff');
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
    clearInterval(this.resyncTimer);
    await this.informer.stop();
  }
}
