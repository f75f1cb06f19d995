// Liveness watchdog (SPEC "The turn"): a turn that keeps its lease but makes no progress for
// 600 s — checked every 15 s — is ended. Progress is anything the turn does: a model stream
// chunk, a model call finishing, a tool starting or finishing, a message persisted. The
// watchdog aborts its signal; the loop ends the turn as interrupted with the reason, and the
// abort reaches the in-flight model request and abandons a tool that never returns.

/** Repeats `fn` every `ms` until the returned function is called (tests inject a manual one). */
export type Ticker = (ms: number, fn: () => void) => () => void;

export const intervalTicker: Ticker = (ms, fn) => {
  const t = setInterval(fn, ms);
  t.unref();
  return () => clearInterval(t);
};

export interface WatchdogOptions {
  /** No progress for this long ends the turn (SPEC: 600 s). */
  stallMs: number;
  /** How often to check (SPEC: 15 s). */
  pollMs: number;
  now?: () => number;
  ticker?: Ticker;
}

export const stallReason = (stallMs: number) => `no progress for ${+(stallMs / 1_000).toFixed(3)} s`;

export class ProgressWatchdog {
  private readonly controller = new AbortController();
  private readonly now: () => number;
  private last: number;
  private readonly cancel: () => void;

  constructor(private readonly opts: WatchdogOptions) {
    this.now = opts.now ?? Date.now;
    this.last = this.now();
    this.cancel = (opts.ticker ?? intervalTicker)(opts.pollMs, () => this.check());
  }

  /** Aborted (reason "no progress for N s") when the turn stalled. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Records progress. */
  readonly progress = (): void => {
    this.last = this.now();
  };

  private check(): void {
    if (this.controller.signal.aborted) return;
    if (this.now() - this.last < this.opts.stallMs) return;
    this.cancel();
    this.controller.abort(new Error(stallReason(this.opts.stallMs)));
  }

  stop(): void {
    this.cancel();
  }
}
