// Waiting inside a loop that a stop ends: resolves after `ms`, or as soon as `signal` aborts —
// also when it aborted before the call (a stop that lands during the loop's work must not wait
// out a whole period: an 'abort' listener added to an aborted signal never fires).
/** Resolves after `ms` or when `signal` aborts, whichever comes first; never rejects. The timer does not keep the process alive. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    t.unref();
    function done() { clearTimeout(t); signal.removeEventListener('abort', done); resolve(); }
    signal.addEventListener('abort', done, { once: true });
  });
}
