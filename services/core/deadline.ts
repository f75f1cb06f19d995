// A caller's abort signal with a deadline added, for one request.
//
// Not `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: Node 20 holds the sources of any()
// weakly, so a timeout signal that nothing else references can be garbage-collected before it
// fires and the request then has no deadline at all (nodejs/node#57736; seen here as a Mixture-of-
// Agents reference that hung past its 120 s deadline under make dev). The timer below holds its
// controller strongly until it fires or is cleared.

export interface Deadline {
  /** Aborts with the caller's reason, or after `ms` with a TimeoutError (as AbortSignal.timeout does). */
  signal: AbortSignal;
  /** Stops the timer: call it when the request is over. */
  clear(): void;
}

export function withDeadline(signal: AbortSignal | undefined, ms: number, message = `the operation did not finish within ${ms} ms`): Deadline {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DOMException(message, 'TimeoutError')), ms);
  timer.unref();
  return { signal: signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal, clear: () => clearTimeout(timer) };
}
