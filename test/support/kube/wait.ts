/** Options for {@link waitFor}. */
export interface WaitOptions {
  /** What is awaited, for the timeout message. */
  what: string;
  /** @defaultValue 30_000 */
  timeoutMs?: number;
  /** @defaultValue 100 */
  intervalMs?: number;
  /** Checked before each poll: an Error returned here ends the wait at once (e.g. the process died). */
  bail?: () => Error | undefined;
}

/**
 * Polls `check` until it returns something other than `undefined`/`false`, or throws after the
 * deadline with the last error `check` threw. Tests wait on state, never on fixed sleeps.
 */
export async function waitFor<T>(check: () => Promise<T | undefined | false> | T | undefined | false, opts: WaitOptions): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let lastError: unknown;
  for (;;) {
    const fatal = opts.bail?.();
    if (fatal) throw fatal;
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
      throw new Error(`Timed out after ${opts.timeoutMs ?? 30_000}ms waiting for ${opts.what}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 100));
  }
}
