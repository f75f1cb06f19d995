// One MCP server's failure book: reconnects back off (1 s, 2 s, 4 s …) after each failure in a
// row, and from the third failure in a row the circuit opens: nothing is tried for a cool-down
// (60 s, doubling up to 10 min). A success closes it. The clock is injected (tests).

export interface BreakerOptions {
  /** Failures in a row that open the circuit. @defaultValue 3 */
  threshold?: number;
  /** First reconnect delay. @defaultValue 1 000 ms */
  backoffMs?: number;
  /** First cool-down of an open circuit. @defaultValue 60 000 ms */
  cooldownMs?: number;
  /** Longest cool-down. @defaultValue 600 000 ms */
  maxCooldownMs?: number;
}

export type BreakerState = { open: false; failures: number } | { open: true; failures: number; retryAt: number };

export class ServerBreaker {
  private failures = 0;
  private notBefore = 0;
  private lastError = '';
  private readonly threshold: number;
  private readonly backoffMs: number;
  private readonly cooldownMs: number;
  private readonly maxCooldownMs: number;

  constructor(private readonly now: () => number, o: BreakerOptions = {}) {
    this.threshold = o.threshold ?? 3;
    this.backoffMs = o.backoffMs ?? 1_000;
    this.cooldownMs = o.cooldownMs ?? 60_000;
    this.maxCooldownMs = o.maxCooldownMs ?? 600_000;
  }

  /** Why nothing may be tried now (in words for the model), or undefined when an attempt may go. */
  refusal(): string | undefined {
    const wait = this.notBefore - this.now();
    if (wait <= 0) return undefined;
    const secs = Math.ceil(wait / 1_000);
    return this.failures >= this.threshold
      ? `the server failed ${this.failures} times in a row; its circuit breaker is open for another ${secs} s (last error: ${this.lastError})`
      : `reconnecting after a failure, next attempt in ${secs} s (last error: ${this.lastError})`;
  }

  get open(): boolean {
    return this.failures >= this.threshold && this.notBefore > this.now();
  }

  failed(error: string): void {
    this.failures++;
    this.lastError = error;
    const delay = this.failures >= this.threshold
      ? Math.min(this.cooldownMs * 2 ** (this.failures - this.threshold), this.maxCooldownMs)
      : this.backoffMs * 2 ** (this.failures - 1);
    this.notBefore = this.now() + delay;
  }

  succeeded(): void {
    this.failures = 0;
    this.notBefore = 0;
    this.lastError = '';
  }
}
