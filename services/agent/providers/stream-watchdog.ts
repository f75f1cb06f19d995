// Stale-stream detection: a stream that sends nothing for `staleMs` is aborted and reported as a
// StreamError (retryable), so a provider that stalls mid-answer cannot hold a turn forever.
import { StreamError } from '../errors.js';
import type { Completion, CompletionRequest } from '../messages.js';

export interface Watchdog {
  /** Pass to the SDK: aborts on the caller's signal or when the stream goes stale. */
  signal: AbortSignal;
  touch(): void;
  stop(): void;
  /** Turns an error thrown while streaming into what the loop classifies. */
  wrap(err: unknown, responseStarted: boolean): unknown;
}

export function startWatchdog(caller: AbortSignal, staleMs: number): Watchdog {
  const stale = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => stale.abort(new StreamError(`stream stale: no data for ${Math.round(staleMs / 1000)} s`, true)), staleMs);
    timer.unref();
  };
  arm();
  return {
    signal: AbortSignal.any([caller, stale.signal]),
    touch: arm,
    stop: () => clearTimeout(timer),
    wrap(err, responseStarted) {
      if (caller.aborted) return err;
      if (stale.signal.aborted) return stale.signal.reason;
      const e = err as { status?: unknown };
      if (responseStarted && typeof e?.status !== 'number') return new StreamError(`stream broke: ${(err as Error)?.message ?? String(err)}`);
      return err;
    },
  };
}

/** Local model servers (Ollama, vLLM on this machine) get the longer stale timeout. */
export function isLocalURL(url: string | undefined): boolean {
  if (!url) return false;
  try {
    const h = new URL(url).hostname;
    return h === 'localhost' || h === '::1' || h === '[::1]' || h.startsWith('127.') || h === '0.0.0.0' || h.endsWith('.local');
  } catch {
    return false;
  }
}

/** 180 s for hosted providers, 900 s for local ones. */
export const staleTimeoutMs = (local: boolean): number => (local ? 900_000 : 180_000);

/** Folds one provider's stream events into a completion. */
export interface StreamAccumulator<E> {
  add(event: E): void;
  result(): Completion;
}

/**
 * Runs one streaming request under the stale-stream watchdog: `open` starts it with the signal
 * to pass to the SDK; every event resets the watchdog and reports progress (`onChunk`) before the
 * accumulator folds it. Errors come out as the loop classifies them (see {@link Watchdog.wrap}).
 */
export async function streamCompletion<E>(req: CompletionRequest, staleMs: number, open: (signal: AbortSignal) => Promise<AsyncIterable<E>>, acc: StreamAccumulator<E>): Promise<Completion> {
  const dog = startWatchdog(req.signal, staleMs);
  let started = false;
  try {
    const stream = await open(dog.signal);
    started = true;
    for await (const event of stream) {
      dog.touch();
      req.onChunk?.();
      acc.add(event);
    }
    // The SDKs end an aborted stream quietly: a stop or a stale stream must not pass as an answer.
    if (dog.signal.aborted) throw new Error('stream aborted');
    return acc.result();
  } catch (err) {
    throw dog.wrap(err, started);
  } finally {
    dog.stop();
  }
}
