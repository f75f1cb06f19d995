// Stale-stream detection: a stream that sends nothing for `staleMs` is aborted and reported as a
// StreamError (retryable), so a provider that stalls mid-answer cannot hold a turn forever; and a
// bound on the whole request (`totalMs`, HERMES_MODEL_TIMEOUT_SECONDS), so neither can one that
// keeps sending a little. The SDKs' own timeout ends at the response headers.
import { StreamError } from '../errors.js';
import type { Completion, CompletionRequest } from '../messages.js';

export interface StreamLimits {
  /** Longest silence between two stream events. */
  staleMs: number;
  /** Longest whole request, from sending it to the last event. */
  totalMs: number;
}

/** The whole request took longer than its bound: classified as a timeout (retried, then the ladder). */
function requestTimeout(totalMs: number): Error {
  const err = new Error(`model request timed out: no complete answer within ${Number((totalMs / 1000).toFixed(1))} s (HERMES_MODEL_TIMEOUT_SECONDS)`);
  err.name = 'TimeoutError';
  return err;
}

export interface Watchdog {
  /** Pass to the SDK: aborts on the caller's signal, when the stream goes stale, or when the request runs past its bound. */
  signal: AbortSignal;
  touch(): void;
  stop(): void;
  /** Turns an error thrown while streaming into what the loop classifies. */
  wrap(err: unknown, responseStarted: boolean): unknown;
}

export function startWatchdog(caller: AbortSignal, { staleMs, totalMs }: StreamLimits): Watchdog {
  // Aborted with its reason: a stale stream, or the whole request over its bound.
  const cut = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => cut.abort(new StreamError(`stream stale: no data for ${Math.round(staleMs / 1000)} s`, true)), staleMs);
    timer.unref();
  };
  arm();
  const deadline = setTimeout(() => cut.abort(requestTimeout(totalMs)), totalMs);
  deadline.unref();
  return {
    signal: AbortSignal.any([caller, cut.signal]),
    touch: arm,
    stop: () => { clearTimeout(timer); clearTimeout(deadline); },
    wrap(err, responseStarted) {
      if (caller.aborted) return err;
      if (cut.signal.aborted) return cut.signal.reason;
      if (err instanceof StreamError) return err;
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

/** A streaming response as the SDK opened it: its events, and its content type (for the message when it has none). */
export interface OpenedStream<E> {
  events: AsyncIterable<E>;
  contentType: string | null;
}

/** The SDKs' request promise (both have `withResponse`) as an {@link OpenedStream}. */
export async function opened<E>(request: { withResponse(): Promise<{ data: AsyncIterable<E>; response: Response }> }): Promise<OpenedStream<E>> {
  const { data, response } = await request.withResponse();
  return { events: data, contentType: response.headers.get('content-type') };
}

/**
 * Runs one streaming request under the stale-stream watchdog: `open` starts it with the signal
 * to pass to the SDK; every event resets the watchdog and reports progress (`onChunk`) before the
 * accumulator folds it. Errors come out as the loop classifies them (see {@link Watchdog.wrap}).
 * A response without a single event (an HTML page from a wrong base URL or a proxy, an empty
 * stream) is a StreamError saying what came, not an empty answer.
 */
export async function streamCompletion<E>(req: CompletionRequest, limits: StreamLimits, open: (signal: AbortSignal) => Promise<OpenedStream<E>>, acc: StreamAccumulator<E>): Promise<Completion> {
  const dog = startWatchdog(req.signal, limits);
  let started = false;
  try {
    const { events, contentType } = await open(dog.signal);
    started = true;
    let seen = 0;
    for await (const event of events) {
      seen++;
      dog.touch();
      req.onChunk?.();
      acc.add(event);
    }
    // The SDKs end an aborted stream quietly: a stop or a stale stream must not pass as an answer.
    if (dog.signal.aborted) throw new Error('stream aborted');
    if (seen === 0) throw new StreamError(`the response carried no stream events (content-type ${contentType ?? 'none'}); is the base URL the provider's API?`);
    return acc.result();
  } catch (err) {
    throw dog.wrap(err, started);
  } finally {
    dog.stop();
  }
}
