// The calls a kubernetes backend (a Pod per call, or mode session) has in flight: each with its
// own abort (the request's signal, or close()), a promise of "the command runs now", and its
// outcome as an ExecResult. A failure the run throws is a `degraded` result, never a rejection.
import type { CappedOutput, RollingOutput } from '../output.js';
import type { ExecRequest, ExecResult } from '../types.js';
import { apiFailure } from './failures.js';
import type { PodOutcome } from './pod-run.js';

export type Output = CappedOutput | RollingOutput;

export interface Call<R> {
  /** True once the command runs; false when it settled without running. */
  running: Promise<boolean>;
  done: Promise<R>;
  abort: AbortController;
}

/** What a run gets: the call's own signal, and the callback for "the command runs now". */
export type Run<T> = (signal: AbortSignal, onRunning: () => void) => Promise<PodOutcome | T>;

export class Calls {
  private readonly calls = new Set<Call<unknown>>();

  /**
   * Starts `run` for `req`; its outcome becomes an ExecResult with `output` (a `T` it answers
   * instead, e.g. "not run here", passes through). `doing` names the step for a thrown failure.
   */
  start<T = never>(req: ExecRequest, output: Output, doing: string, run: Run<T>): Call<ExecResult | T> {
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    if (req.signal.aborted) abort.abort();
    else req.signal.addEventListener('abort', onAbort, { once: true });
    let setRunning!: (v: boolean) => void;
    const running = new Promise<boolean>((resolve) => { setRunning = resolve; });
    const t0 = Date.now();
    const finish = (o: PodOutcome): ExecResult => ({
      exitCode: o.exitCode, output: output.text(), truncated: output.truncated, status: o.status,
      ...(o.reason ? { reason: o.reason } : {}), durationMs: Date.now() - t0,
    });
    const isOutcome = (o: PodOutcome | T): o is PodOutcome => typeof o === 'object' && o !== null && 'status' in o && 'exitCode' in o;
    const call: Call<ExecResult | T> = {
      running, abort,
      done: run(abort.signal, () => setRunning(true))
        .then((o) => (isOutcome(o) ? finish(o) : o),
          (err: unknown) => finish({ status: 'degraded', exitCode: -1, reason: apiFailure(err, doing).reason }))
        .finally(() => { setRunning(false); req.signal.removeEventListener('abort', onAbort); this.calls.delete(call); }),
    };
    this.calls.add(call);
    return call;
  }

  /** Aborts every call and waits until all have settled (worker shutdown). */
  async close(): Promise<void> {
    const calls = [...this.calls];
    for (const c of calls) c.abort.abort();
    await Promise.all(calls.map((c) => c.done));
  }
}
