// The thread fetched pages are turned into text in (convert.ts starts and reuses it). Readability,
// Turndown and pdf.js are synchronous and can take minutes on hostile markup (deeply nested
// elements, megabytes of HTML): here they run beside the worker's event loop, not on it, and a
// thread still busy at the deadline is ended. One page at a time; one answer per page.
import { parentPort } from 'node:worker_threads';
import { pageText } from './extract.js';
import type { FetchedPage } from './fetch.js';

export interface PageJob {
  contentType: string;
  body: Uint8Array;
  truncated: boolean;
}

export type PageAnswer =
  | { ready: true }
  | { ok: true; text: Awaited<ReturnType<typeof pageText>> }
  | { ok: false; name: string; message: string };

parentPort!.on('message', (job: PageJob) => {
  const page: FetchedPage = {
    url: '', status: 200, contentType: job.contentType, truncated: job.truncated,
    body: Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength),
  };
  pageText(page).then(
    (text) => parentPort!.postMessage({ ok: true, text } satisfies PageAnswer),
    (err: unknown) => parentPort!.postMessage({ ok: false, name: (err as Error).name ?? 'Error', message: (err as Error).message ?? String(err) } satisfies PageAnswer),
  );
});

// Loaded (starting a thread costs about a second on a busy machine): the reading deadline starts now.
parentPort!.postMessage({ ready: true } satisfies PageAnswer);
