// Local web servers for the web tools' tests: a "public" server on 127.0.0.2 (the tests' guard
// allows 127.0.0.2/32 as if it were a public address) and a "private" one on 127.0.0.1 on the
// SAME port, so a request the guard lets through to the wrong address lands on the private server
// and is counted. Names resolve through `testResolver` (no real DNS).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: SeenRequest, res: ServerResponse) => void;

export interface FakeServer {
  port: number;
  host: string;
  origin: string;
  seen: SeenRequest[];
  /** Routes by path (without the query); unknown paths answer 404. */
  routes: Map<string, Handler>;
  close(): Promise<void>;
}

function listen(host: string, port: number): Promise<FakeServer> {
  const seen: SeenRequest[] = [];
  const routes = new Map<string, Handler>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: SeenRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(r);
      const handler = routes.get(new URL(r.url, 'http://x').pathname);
      if (handler) handler(r, res);
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const p = (server.address() as AddressInfo).port;
      resolve({
        port: p, host, origin: `http://${host}:${p}`, seen, routes,
        close: () => new Promise<void>((done) => { server.closeAllConnections(); server.close(() => done()); }),
      });
    });
  });
}

/** The public server (127.0.0.2) and a private one (127.0.0.1) on the same port. */
export async function startWebPair(): Promise<{ pub: FakeServer; priv: FakeServer }> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const pub = await listen('127.0.0.2', 0);
    try {
      const priv = await listen('127.0.0.1', pub.port);
      return { pub, priv };
    } catch {
      await pub.close();
    }
  }
  throw new Error('could not bind the same port on 127.0.0.2 and 127.0.0.1');
}

export const v4 = (address: string): LookupAddress => ({ address, family: 4 });

/**
 * Test DNS: public.test and other.test → 127.0.0.2, internal.test → 127.0.0.1 (the private
 * server), metadata-ish.test → 169.254.169.254, mixed.test → one public and one private address,
 * rebind.test → public, then private, alternating; anything else does not resolve.
 */
export function testResolver(): { resolve: (host: string) => Promise<LookupAddress[]>; asked: string[] } {
  const asked: string[] = [];
  let flip = 0;
  const table: Record<string, () => LookupAddress[]> = {
    'public.test': () => [v4('127.0.0.2')],
    'other.test': () => [v4('127.0.0.2')],
    'internal.test': () => [v4('127.0.0.1')],
    'ten.test': () => [v4('10.0.0.1')],
    'metadata-ish.test': () => [v4('169.254.169.254')],
    'mixed.test': () => [v4('127.0.0.2'), v4('127.0.0.1')],
    'rebind.test': () => [v4(flip++ % 2 === 0 ? '127.0.0.2' : '127.0.0.1')],
    'empty.test': () => [],
  };
  return {
    asked,
    resolve: (host: string) => {
      asked.push(host);
      const entry = table[host.toLowerCase()];
      if (!entry) return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
      return Promise.resolve(entry());
    },
  };
}

/** A minimal valid one-page PDF showing `text` (Helvetica), with a correct xref table. */
export function tinyPdf(text: string): Buffer {
  const stream = `BT /F1 18 Tf 72 720 Td (${text.replace(/[()\\]/g, (c) => `\\${c}`)}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
