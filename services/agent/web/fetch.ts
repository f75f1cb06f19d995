// One guarded HTTP fetch for the web tools: every hop's URL checked (urlGuard), redirects followed
// by hand (at most `maxRedirects`, each new URL checked again, including its resolved address at
// connect time), a deadline, and a body read up to `maxBytes` (more is cut off, not buffered).
import { fetch, type Response } from 'undici';
import { withDeadline } from '../../core/deadline.js';
import { refusalIn, UrlRefused, type UrlGuard } from './ssrf.js';

export interface FetchLimits {
  /** @defaultValue 5 */
  maxRedirects?: number;
  /** Body bytes read at most; the rest is dropped and `truncated` set. */
  maxBytes: number;
  timeoutMs: number;
}

export interface FetchedPage {
  /** The URL after redirects. */
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  truncated: boolean;
}

export interface FetchRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

export const USER_AGENT = 'HermesAgent/1.0 (+https://hermes.dev)';

async function readCapped(res: Response, maxBytes: number, signal: AbortSignal): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  if (!res.body) return { body: Buffer.alloc(0), truncated };
  const reader = res.body.getReader();
  try {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - size;
      if (value.byteLength > room) {
        chunks.push(Buffer.from(value.subarray(0, room)));
        size += room;
        truncated = true;
        break;
      }
      chunks.push(Buffer.from(value));
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return { body: Buffer.concat(chunks, size), truncated };
}

/** The next hop of a redirect: its URL checked, and what of the request goes along. */
function redirected(guard: UrlGuard, current: string, location: string, status: number, request: FetchRequest): { url: string; request: FetchRequest } {
  let target: string;
  try {
    target = new URL(location, current).toString();
  } catch {
    throw new UrlRefused(location, 'the redirect location is not a valid URL');
  }
  const next = guard.checkUrl(target);
  // Headers (a provider's key) never follow a redirect to another origin.
  if (next.origin !== new URL(current).origin) return { url: next.toString(), request: {} };
  // A redirect turns the request into a plain GET (303 always; 301/302 in practice); 307/308 keep it.
  if (status === 307 || status === 308) return { url: next.toString(), request };
  return { url: next.toString(), request: request.headers ? { headers: request.headers } : {} };
}

/** A network failure in words the model can act on (the caller's own abort passes as it is). */
function failure(err: unknown, url: string, signal: AbortSignal, limits: FetchLimits): unknown {
  if (signal.aborted) return err;
  if ((err as Error).name === 'TimeoutError') return new Error(`${url} did not answer within ${limits.timeoutMs / 1_000} s`, { cause: err });
  let e: unknown = err;
  while ((e as { cause?: unknown }).cause) e = (e as { cause?: unknown }).cause;
  const code = (e as { code?: string }).code;
  return new Error(`could not fetch ${url}: ${code ? `${code} ` : ''}${(e as Error).message ?? String(e)}`, { cause: err });
}

/**
 * Fetches `url` through `guard`. Throws UrlRefused for a refused URL or address (any hop) and for
 * names that do not resolve; other network failures as an Error naming the URL and the cause (the
 * caller's abort as it came).
 */
export async function guardedFetch(guard: UrlGuard, url: string, limits: FetchLimits, signal: AbortSignal, request: FetchRequest = {}): Promise<FetchedPage> {
  const { signal: deadline, clear } = withDeadline(signal, limits.timeoutMs);
  try {
    return await fetchHops(guard, url, limits, { caller: signal, deadline }, request);
  } finally {
    clear();
  }
}

/** The hops of one guardedFetch: `caller` is the caller's own signal, `deadline` it with the time limit added. */
async function fetchHops(guard: UrlGuard, url: string, limits: FetchLimits, signals: { caller: AbortSignal; deadline: AbortSignal }, request: FetchRequest): Promise<FetchedPage> {
  const { caller: signal, deadline } = signals;
  let current = guard.checkUrl(url).toString();
  let init = request;
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await fetch(current, {
        method: init.method ?? 'GET',
        headers: { 'user-agent': USER_AGENT, ...init.headers },
        ...(init.body !== undefined ? { body: init.body } : {}),
        redirect: 'manual',
        dispatcher: guard.dispatcher,
        signal: deadline,
      });
    } catch (err) {
      throw refusalIn(err, current) ?? failure(err, current, signal, limits);
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel().catch(() => undefined);
      const maxRedirects = limits.maxRedirects ?? 5;
      if (hop >= maxRedirects) throw new UrlRefused(url, `more than ${maxRedirects} redirects`);
      ({ url: current, request: init } = redirected(guard, current, location, res.status, init));
      continue;
    }
    const { body, truncated } = await readCapped(res, limits.maxBytes, deadline).catch((err: unknown) => { throw failure(err, current, signal, limits); });
    return { url: current, status: res.status, contentType: res.headers.get('content-type') ?? '', body, truncated };
  }
}
