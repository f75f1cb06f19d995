// A fetched page turned into text off the event loop: pageText (extract.ts) runs in a thread
// (page-thread.ts) with a deadline and a memory limit, so a hostile page (thousands of nested
// elements, megabytes of markup, a PDF that takes pdf.js minutes) cannot stall the worker's other
// turns, leases and heartbeats. A thread that finished its page is kept for the next (a few idle
// ones per process, unref'd: starting one costs about a second); one still busy at the deadline,
// at the caller's abort, or out of memory is ended, and the page's error says which.
import { Worker } from 'node:worker_threads';
import { UnsupportedContent, type PageText } from './extract.js';
import type { FetchedPage } from './fetch.js';
import type { PageAnswer, PageJob } from './page-thread.js';

export interface ConvertLimits {
  /** How long turning one page into text may take. */
  timeoutMs: number;
}

/** Heap of one reading thread: a page over it is refused, not the worker's memory spent. */
const MAX_HEAP_MB = 512;
/** How long a new thread may take to load, apart from the page's own deadline. */
const STARTUP_MS = 60_000;
/** Pages read at once per process (each thread may take a core and MAX_HEAP_MB); others wait their turn. */
const MAX_READERS = 2;
/** Idle threads kept for later pages. */
const MAX_IDLE = MAX_READERS;
const idle: Worker[] = [];
let reading = 0;
const waiting: (() => void)[] = [];

/** A reader's place: at once when one is free, else when one is (or the caller's abort). */
function place(signal: AbortSignal): Promise<() => void> {
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    const next = waiting.shift();
    if (next) next();
    else reading--;
  };
  if (reading < MAX_READERS) {
    reading++;
    return Promise.resolve(release);
  }
  return new Promise((resolve, reject) => {
    const go = (): void => { signal.removeEventListener('abort', onAbort); resolve(release); };
    const onAbort = (): void => { waiting.splice(waiting.indexOf(go), 1); reject(signal.reason); };
    waiting.push(go);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const threadUrl = new URL('./page-thread.ts', import.meta.url).href;

/** A reading thread: an idle one (ready), or a new one (the sources are TypeScript, so it registers tsx first). */
function takeThread(): { thread: Worker; ready: boolean } {
  const kept = idle.pop();
  if (kept) {
    kept.removeAllListeners('exit');
    kept.ref();
    return { thread: kept, ready: true };
  }
  const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(threadUrl)}); });`;
  return { thread: new Worker(bootstrap, { eval: true, resourceLimits: { maxOldGenerationSizeMb: MAX_HEAP_MB } }), ready: false };
}

function keepThread(thread: Worker): void {
  if (idle.length >= MAX_IDLE) return void thread.terminate();
  thread.unref();
  idle.push(thread);
  // An idle thread that dies (it should not) is forgotten.
  thread.once('exit', () => { const i = idle.indexOf(thread); if (i >= 0) idle.splice(i, 1); });
}

/**
 * pageText(page) in a reading thread, bounded by `limits` and `signal`: at most MAX_READERS pages
 * are read at once; the deadline counts from when the page's thread starts reading it.
 */
export async function pageTextBounded(page: FetchedPage, limits: ConvertLimits, signal: AbortSignal): Promise<PageText> {
  signal.throwIfAborted();
  const release = await place(signal);
  try {
    return await readInThread(page, limits, signal);
  } finally {
    release();
  }
}

function readInThread(page: FetchedPage, limits: ConvertLimits, signal: AbortSignal): Promise<PageText> {
  const { thread, ready } = takeThread();
  return new Promise<PageText>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (keep: boolean, fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      thread.off('message', onMessage).off('error', onError).off('exit', onExit);
      if (keep) keepThread(thread);
      else void thread.terminate();
      fn();
    };
    const onAbort = () => finish(false, () => reject(signal.reason));
    const send = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => finish(false, () => reject(new Error(`the page could not be read within ${limits.timeoutMs / 1_000} s (too large or too deeply nested)`))), limits.timeoutMs);
      timer.unref();
      const job: PageJob = { contentType: page.contentType, body: page.body, truncated: page.truncated };
      thread.postMessage(job);
    };
    const onMessage = (answer: PageAnswer) => ('ready' in answer ? send() : finish(true, () => {
      if (answer.ok) resolve(answer.text);
      else reject(answer.name === 'UnsupportedContent' ? new UnsupportedContent(answer.message) : new Error(answer.message));
    }));
    const onError = (err: Error & { code?: string }) => finish(false, () => reject(
      err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new Error(`the page could not be read: it needs more than ${MAX_HEAP_MB} MB of memory`) : err,
    ));
    const onExit = (code: number) => finish(false, () => reject(new Error(`the page could not be read (the reader stopped with code ${code})`)));
    signal.addEventListener('abort', onAbort, { once: true });
    thread.on('message', onMessage).on('error', onError).on('exit', onExit);
    if (ready) send();
    else {
      timer = setTimeout(() => finish(false, () => reject(new Error(`the page reader did not start within ${STARTUP_MS / 1_000} s`))), STARTUP_MS);
      timer.unref();
    }
  });
}
