// A failed cluster call is logged in one readable line. client-node's ApiException carries, as its
// message, the status, the raw body and every response header over several lines: an apiserver
// that throttled the operator (429) filled each "Reconcile failed" / "Watch broke" warning with
// `HTTP-Code: 429\nMessage: Unknown API Status Code!\nBody: "{\"kind\":\"Status\",…}"\nHeaders: {…}`.
import { Writable } from 'node:stream';
import { ApiException } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../../services/core/index.js';
import { Controller } from '../../../operator/runtime/controller.js';

const throttled = () => new ApiException(429, 'Unknown API Status Code!',
  JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Too many requests, please try again later.', reason: 'TooManyRequests', details: { retryAfterSeconds: 1 }, code: 429 }),
  { 'content-type': 'application/json', 'retry-after': '1', date: 'Mon, 07 Dec 2026 20:59:31 GMT' });

describe('a throttled cluster call in the operator log', () => {
  it('is one line naming the status, the reason and the apiserver\'s message', async () => {
    const lines: { msg: string; err?: string }[] = [];
    const sink = new Writable({ write(chunk: Buffer, _enc, done) { for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as { msg: string }); done(); } });
    let calls = 0;
    const c = new Controller('agent', async () => { calls++; throw throttled(); }, pino({ level: 'warn' }, sink) as unknown as Logger, { baseMs: 60_000 });
    c.start(1);
    c.enqueue('ns/a');
    for (let i = 0; i < 200 && lines.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    await c.stop();
    expect(calls).toBe(1);
    expect(lines.map((l) => [l.msg, l.err])).toEqual([['Reconcile failed; retrying with backoff', 'the kube-apiserver answered 429 (TooManyRequests): Too many requests, please try again later.']]);
  });
});
