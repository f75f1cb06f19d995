import { createServer, type Server } from 'node:https';
import type { ServerResponse } from 'node:http';
import { open, readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { execUpgradeHandler, type ExecLookup } from './execServer.js';

/** Where a container's log is, and whether it can still grow. */
export interface ContainerLog {
  file: string;
  /** True once the process has exited (a follow stream then ends at EOF). */
  finished(): boolean;
}

/** Looks a container log up by namespace, pod and container name. */
export type LogLookup = (namespace: string, pod: string, container: string) => ContainerLog | undefined;

function tailLines(text: string, lines: number): string {
  const parts = text.split('\n');
  const trailing = parts[parts.length - 1] === '' ? parts.pop() : undefined;
  return parts.slice(-lines).join('\n') + (trailing === '' ? '\n' : '');
}

/** Until `res` can take more, or is closed; neither listener stays behind. */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => { res.off('drain', done); res.off('close', done); resolve(); };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Streams new bytes of `file` from `offset` until the container finished and EOF is reached. */
async function follow(log: ContainerLog, offset: number, res: ServerResponse): Promise<void> {
  const handle = await open(log.file, 'r');
  let closed = false;
  res.on('close', () => { closed = true; });
  try {
    let position = offset;
    while (!closed) {
      const finished = log.finished();
      // A new buffer each read: res.write keeps a reference to what it has not sent yet, so
      // reusing one overwrote a queued chunk with the next (the first 64 KiB of a flood arrived
      // as a copy of the second).
      const buffer = Buffer.allocUnsafe(64 * 1024);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead > 0) {
        position += bytesRead;
        if (!res.write(buffer.subarray(0, bytesRead)) && !closed) await drainedOrClosed(res);
      } else if (finished) {
        break;
      } else {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    await handle.close();
    res.end();
  }
}

async function serveLog(log: ContainerLog, query: URLSearchParams, res: ServerResponse): Promise<void> {
  const bytes = await readFile(log.file);
  let text = bytes.toString('utf8');
  const tail = query.get('tailLines');
  if (tail !== null) text = tailLines(text, Number(tail));
  const limit = query.get('limitBytes');
  const body = limit !== null ? Buffer.from(text).subarray(0, Number(limit)) : Buffer.from(text);
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  if (query.get('follow') === 'true' && tail === null && limit === null) {
    res.write(body);
    await follow(log, bytes.length, res);
    return;
  }
  res.end(body);
}

/** A running kubelet HTTPS endpoint. */
export interface KubeletServer {
  server: Server;
  port: number;
  /** Ends every exec session (killing its command) and stops listening. */
  close(): Promise<void>;
}

/**
 * The kubelet's HTTPS endpoint, reduced to what kube-apiserver proxies to it:
 * `GET /containerLogs/{ns}/{pod}/{container}` (`pods/log`) and the WebSocket upgrade of
 * `GET|POST /exec/{ns}/{pod}/{container}` (`pods/exec`, see execServer.ts). It does not check
 * the apiserver's client certificate.
 */
export async function startKubeletServer(tls: { cert: Buffer; key: Buffer }, lookup: { log: LogLookup; exec: ExecLookup }): Promise<KubeletServer> {
  const exec = execUpgradeHandler(lookup.exec);
  const server = createServer(tls, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://localhost');
    if (url.pathname.startsWith('/exec/')) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('exec needs a WebSocket upgrade (v5.channel.k8s.io or v4.channel.k8s.io); the test kubelet does not speak SPDY\n');
      return;
    }
    const match = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (req.method !== 'GET' || !match) {
      res.writeHead(404).end('not found\n');
      return;
    }
    const [ns, pod, container] = match.slice(1).map(decodeURIComponent) as [string, string, string];
    const log = lookup.log(ns, pod, container);
    if (!log) {
      res.writeHead(404).end(`container ${container} of pod ${ns}/${pod} is not known to this kubelet\n`);
      return;
    }
    serveLog(log, url.searchParams, res).catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(`failed to read log: ${err.message}\n`);
    });
  });
  server.on('upgrade', exec.onUpgrade);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: async () => {
      exec.closeAll();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
