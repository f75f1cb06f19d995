// A controller loop: workers take keys from a {@link WorkQueue} and reconcile them; a failed
// reconcile comes back after the key's exponential backoff, a successful one resets it. A
// reconcile may ask to run again after a delay (e.g. a CronJob's next slot).
import type { Logger } from '../../services/core/index.js';
import type { OperatorMetrics } from './metrics.js';
import { WorkQueue, type WorkQueueOptions } from './workqueue.js';
import { kubeErrorLine } from '../../services/sandbox/index.js';

export interface ReconcileResult {
  /** Reconcile this key again after this many ms, even if nothing changes. */
  requeueAfterMs?: number;
}

export type Reconciler = (key: string) => Promise<ReconcileResult | void>;

export class Controller {
  private queue: WorkQueue<string> | undefined;
  private workers: Promise<void>[] = [];
  /** Reconciles finished (successfully or not); for tests and metrics. */
  reconciles = 0;

  constructor(readonly name: string, private readonly reconcile: Reconciler, private readonly log: Logger, private readonly queueOpts: WorkQueueOptions = {}, private readonly metrics?: OperatorMetrics) {
    metrics?.watchQueue(name, () => this.queue?.length ?? 0);
  }

  /** Queues a key (ignored while the controller is stopped, e.g. not the leader). */
  enqueue(key: string): void {
    if (!this.queue) return;
    this.metrics?.queueAdds.inc({ name: this.name });
    this.queue.add(key);
  }

  /** Queues a key after `ms` (debounce: a key already waiting for its delay is not delayed again). */
  enqueueAfter(key: string, ms: number): void {
    this.queue?.addAfter(key, ms);
  }

  get running(): boolean {
    return this.queue !== undefined;
  }

  start(workers = 2): void {
    if (this.queue) return;
    const queue = new WorkQueue<string>(this.queueOpts);
    this.queue = queue;
    this.workers = Array.from({ length: workers }, () => this.work(queue));
  }

  private async work(queue: WorkQueue<string>): Promise<void> {
    const m = this.metrics;
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      const timer = m?.reconcileTime.startTimer({ controller: this.name });
      try {
        const result = await this.reconcile(key);
        queue.forget(key);
        if (result?.requeueAfterMs !== undefined) queue.addAfter(key, result.requeueAfterMs);
        m?.reconcileTotal.inc({ controller: this.name, result: result?.requeueAfterMs !== undefined ? 'requeue_after' : 'success' });
      } catch (err) {
        m?.reconcileTotal.inc({ controller: this.name, result: 'error' });
        m?.reconcileErrors.inc({ controller: this.name });
        m?.queueRetries.inc({ name: this.name });
        const retryMs = queue.addRateLimited(key);
        this.log.warn({ err: kubeErrorLine(err), controller: this.name, key, retryMs }, 'Reconcile failed; retrying with backoff');
      } finally {
        timer?.();
        this.reconciles++;
        queue.done(key);
      }
    }
  }

  /** Stops taking keys and waits for reconciles in flight. */
  async stop(): Promise<void> {
    const queue = this.queue;
    this.queue = undefined;
    queue?.shutDown();
    await Promise.all(this.workers);
    this.workers = [];
  }
}
