// The test kubelet's pods/log follow, read by a client slower than the log grows: every byte
// arrives once and in order (it once reused one read buffer while res.write still held it, so a
// queued chunk was overwritten by the next and a flood's first 64 KiB came back as its second).
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeletServer, type KubeletServer } from '../../support/kube/kubeletServer.js';
import { generatePki } from '../../support/kube/pki.js';

describe('test kubelet pods/log follow', () => {
  let dir: string;
  let server: KubeletServer;
  const log = { file: '', done: false };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubelet-log-'));
    const pki = generatePki(dir);
    log.file = join(dir, 'main.log');
    writeFileSync(log.file, '');
    server = await startKubeletServer({ cert: readFileSync(pki.apiserver.cert), key: readFileSync(pki.apiserver.key) }, {
      log: () => ({ file: log.file, finished: () => log.done }),
      exec: () => ({ ok: false, code: 404, message: 'no exec here' }),
    });
  });

  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers a flood written while the reader is paused intact', async () => {
    let text = 'FIRST\n';
    for (let i = 1; i <= 200_000; i++) text += `${i}\n`;
    const received = new Promise<string>((resolve, reject) => {
      const req = get({ host: '127.0.0.1', port: server.port, path: '/containerLogs/ns/pod/main?follow=true', rejectUnauthorized: false }, (res) => {
        const chunks: Buffer[] = [];
        // Not reading for a while: the server's writes queue up behind the paused socket.
        res.pause();
        setTimeout(() => res.resume(), 500);
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
    // The log grows after the follow has begun, in pieces, then the container ends.
    await new Promise((r) => setTimeout(r, 100));
    for (let at = 0; at < text.length; at += 100_000) appendFileSync(log.file, text.slice(at, at + 100_000));
    log.done = true;
    const got = await received;
    expect(got.length).toBe(text.length);
    // Where it first differs, with what was there (a 2 MB diff would say nothing).
    let at = 0;
    while (at < text.length && got[at] === text[at]) at++;
    expect({ at, got: got.slice(at, at + 20) }).toEqual({ at: text.length, got: '' });
  });
});
