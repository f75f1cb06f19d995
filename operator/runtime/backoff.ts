// Per-item exponential backoff (client-go's ItemExponentialFailureRateLimiter): base·2^failures,
// capped; `forget` resets an item after a success.

/** Options for {@link ItemBackoff}. */
export interface BackoffOptions {
  /** First delay. @defaultValue 200 ms */
  baseMs?: number;
  /** Largest delay. @defaultValue 60_000 ms */
  maxMs?: number;
}

export class ItemBackoff<K> {
  private readonly failures = new Map<K, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;

  constructor(opts: BackoffOptions = {}) {
    this.baseMs = opts.baseMs ?? 200;
    this.maxMs = opts.maxMs ?? 60_000;
  }

  /** Records a failure of `key` and returns how long to wait before retrying it. */
  next(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return Math.min(this.maxMs, this.baseMs * 2 ** Math.min(n, 30));
  }

  failuresOf(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: K): void {
    this.failures.delete(key);
  }
}
