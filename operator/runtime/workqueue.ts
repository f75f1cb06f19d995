// A de-duplicating, rate-limited work queue (client-go's workqueue): a key is queued at most once,
// never processed by two workers at the same time, and re-queued after processing if it was
// added meanwhile. Failed keys come back after a per-item exponential backoff. Timers are
// injectable so tests do not wait for real delays.
import { ItemBackoff, type BackoffOptions } from './backoff.js';

/** Schedules `fn` after `ms`; returns a cancel function. */
export type Scheduler = (fn: () => void, ms: number) => () => void;

export const realScheduler: Scheduler = (fn, ms) => {
  const t = setTimeout(fn, ms);
  t.unref();
  return () => clearTimeout(t);
};

/** Options for {@link WorkQueue}. */
export interface WorkQueueOptions extends BackoffOptions {
  /** @defaultValue {@link realScheduler} */
  scheduler?: Scheduler;
}

export class WorkQueue<K = string> {
  private readonly queue: K[] = [];
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly delayed = new Map<K, () => void>();
  private readonly waiters: ((k: K | undefined) => void)[] = [];
  private readonly backoff: ItemBackoff<K>;
  private readonly schedule: Scheduler;
  private shuttingDown = false;

  constructor(opts: WorkQueueOptions = {}) {
    this.backoff = new ItemBackoff<K>(opts);
    this.schedule = opts.scheduler ?? realScheduler;
  }

  /** Queues `key` unless it is already waiting. */
  add(key: K): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // re-queued by done()
    const waiter = this.waiters.shift();
    if (waiter) waiter(key);
    else this.queue.push(key);
  }

  /** Queues `key` after `ms` (an earlier pending delay for the same key wins). */
  addAfter(key: K, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    if (this.delayed.has(key)) return;
    this.delayed.set(key, this.schedule(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms));
  }

  /** Queues `key` after its backoff delay; returns the delay. */
  addRateLimited(key: K): number {
    const ms = this.backoff.next(key);
    this.addAfter(key, ms);
    return ms;
  }

  /** Resets `key`'s backoff (after a successful reconcile). */
  forget(key: K): void {
    this.backoff.forget(key);
  }

  failures(key: K): number {
    return this.backoff.failuresOf(key);
  }

  /** The next key to process, or `undefined` once shut down. Call {@link done} afterwards. */
  async get(): Promise<K | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) return this.take(key);
    if (this.shuttingDown) return undefined;
    const next = await new Promise<K | undefined>((resolve) => this.waiters.push(resolve));
    return next === undefined ? undefined : this.take(next);
  }

  private take(key: K): K {
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  /** Marks `key` processed; if it was added while processing, it is queued again. */
  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  get length(): number {
    return this.queue.length;
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const cancel of this.delayed.values()) cancel();
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
