// Reads a container's log through the apiserver's pods/log, as a byte stream we control (the
// client library's Log pipes the body and swallows its errors, so a stream cut mid-way would
// look like a clean end). `skipBytes` lets a re-read after a cut stream continue where it stopped.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface LogTarget {
  namespace: string;
  pod: string;
  container: string;
}

/** How a log read ended: `eof` (the server closed it cleanly), `cut` (an error mid-way) or `aborted`. */
export interface LogRead {
  end: 'eof' | 'cut' | 'aborted';
  /** Bytes received after the skipped ones. */
  bytes: number;
  error?: string;
}

async function open(kc: KubeConfig, target: LogTarget, follow: boolean, signal: AbortSignal): Promise<IncomingMessage> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(`${cluster.server.replace(/\/$/, '')}/api/v1/namespaces/${encodeURIComponent(target.namespace)}/pods/${encodeURIComponent(target.pod)}/log`);
  url.searchParams.set('container', target.container);
  if (follow) url.searchParams.set('follow', 'true');
  const opts: RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { ...opts, method: 'GET', signal }, (res) => {
      if (res.statusCode === 200) return resolve(res);
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { if (body.length < 2_000) body += c; });
      res.on('end', () => reject(Object.assign(new Error(`pods/log answered ${res.statusCode}: ${body.slice(0, 500)}`), { code: res.statusCode, body })));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Streams the log (following it while the container runs when `follow`), decoded as UTF-8 and
 * pushed to `onText`, skipping the first `skipBytes` bytes. Never rejects once the stream is open.
 * Rejects when it cannot be opened (the container has not started, the Pod is gone, no API).
 */
export async function readLog(kc: KubeConfig, target: LogTarget, opts: { follow: boolean; skipBytes?: number; signal: AbortSignal; onText: (text: string) => void }): Promise<LogRead> {
  const res = await open(kc, target, opts.follow, opts.signal);
  const decoder = new TextDecoder('utf-8');
  let toSkip = opts.skipBytes ?? 0;
  let bytes = 0;
  let settled = false;
  return new Promise((resolve) => {
    const done = (end: LogRead['end'], error?: string) => {
      if (settled) return;
      settled = true;
      const rest = decoder.decode();
      if (rest) opts.onText(rest);
      resolve({ end, bytes, ...(error ? { error } : {}) });
    };
    res.on('data', (chunk: Buffer) => {
      if (toSkip > 0) {
        const n = Math.min(toSkip, chunk.length);
        toSkip -= n;
        chunk = chunk.subarray(n);
      }
      if (!chunk.length) return;
      bytes += chunk.length;
      const text = decoder.decode(chunk, { stream: true });
      if (text) opts.onText(text);
    });
    res.on('end', () => done(res.complete ? 'eof' : 'cut'));
    res.on('error', (err) => done(opts.signal.aborted ? 'aborted' : 'cut', err.message));
    res.on('aborted', () => done(opts.signal.aborted ? 'aborted' : 'cut', 'aborted'));
  });
}
