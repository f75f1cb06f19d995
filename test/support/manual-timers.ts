// Timers a test fires by hand (for code that takes injectable `setTimeout`/`clearTimeout`, such
// as the config listener's backoff): nothing runs until the test calls `fireNext()`, so backoff
// is checked without waiting for it.
export interface ManualTimer {
  ms: number;
  fn: () => void;
}

export interface ManualTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Timers scheduled and neither fired nor cleared, in the order they were scheduled. */
  readonly pending: readonly ManualTimer[];
  /** Every delay ever scheduled, in order. */
  readonly scheduled: readonly number[];
  /** Fires the pending timer that is due first (ties: the earliest scheduled); false when none is pending. */
  fireNext(filter?: (t: ManualTimer) => boolean): boolean;
}

export function manualTimers(): ManualTimers {
  let now = 0;
  const pending: (ManualTimer & { due: number })[] = [];
  const scheduled: number[] = [];
  return {
    setTimeout(fn, ms) {
      const t = { fn, ms, due: now + ms };
      pending.push(t);
      scheduled.push(ms);
      return t;
    },
    clearTimeout(handle) {
      const i = pending.indexOf(handle as (typeof pending)[number]);
      if (i >= 0) pending.splice(i, 1);
    },
    get pending() { return pending; },
    get scheduled() { return scheduled; },
    fireNext(filter = () => true) {
      const candidates = pending.filter(filter);
      if (candidates.length === 0) return false;
      const next = candidates.reduce((a, b) => (b.due < a.due ? b : a));
      pending.splice(pending.indexOf(next), 1);
      now = Math.max(now, next.due);
      next.fn();
      return true;
    },
  };
}
