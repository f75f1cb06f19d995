// A seeded HTTP fuzzer for the gateway, on raw loopback sockets (so it can send what well-behaved
// clients refuse to: control bytes in paths and headers, lying Content-Length, random bytes).
// Each request is answered or not; we read only the status line, then drop the connection (a
// long wait is cut after `timeoutMs`, which also exercises clients that hang up).
//
//   const { statuses } = await fuzzGateway({ url, key, agents: ['default/demo'], requests: 2_000, seed: 7 });
import { connect } from 'node:net';
import { pick, prng, type Rand } from './random.js';

export interface FuzzOptions {
  /** Base URL of the gateway, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** A key some of the agents accept (so fuzzing also reaches past authentication). */
  key: string;
  /** `namespace/name` of agents that exist. */
  agents: string[];
  requests: number;
  /** @defaultValue 1 */
  seed?: number;
  /** Requests in flight at once. @defaultValue 16 */
  lanes?: number;
  /** Drop a request that has no status line after this long. @defaultValue 3000 */
  timeoutMs?: number;
  /** Largest body generated. @defaultValue 1.2 MiB (over the default body limit) */
  maxBodyBytes?: number;
}

export interface FuzzResult {
  /** Status code (or 'timeout' / 'closed' when none came) → count. */
  statuses: Record<string, number>;
  /** Up to 20 requests answered with a 5xx, for the report. */
  serverErrors: { status: number; request: string }[];
}

const int = (r: Rand, max: number) => Math.floor(r() * max);

const nasty = ['\u0000', '\u0001', '\u001f', '\u007f', '\ud800', '\udfff', '\ud83d\ude00', '\u202e', '\ufeff', '\uffff', '%', ':', '/', '\\', '"', '\n', '\r\n', '\t', 'é', '𝕳', '..', '%00', '%2F', '{', '}'];

function weirdString(r: Rand, maxLen = 64): string {
  const n = int(r, maxLen + 1);
  let s = '';
  for (let i = 0; i < n; i++) {
    const roll = r();
    if (roll < 0.25) s += pick(r, nasty);
    else if (roll < 0.5) s += String.fromCharCode(int(r, 0x10000));
    else s += String.fromCharCode(0x20 + int(r, 0x5f));
  }
  return s;
}

function weirdValue(r: Rand, depth = 0): unknown {
  const roll = r();
  if (depth > 3 || roll < 0.3) return weirdString(r);
  if (roll < 0.4) return int(r, 1e9) * (r() < 0.5 ? -1 : 1);
  if (roll < 0.45) return r() < 0.5;
  if (roll < 0.5) return null;
  if (roll < 0.75) return Array.from({ length: int(r, 4) }, () => weirdValue(r, depth + 1));
  return Object.fromEntries(Array.from({ length: int(r, 4) }, () => [weirdString(r, 12), weirdValue(r, depth + 1)]));
}

const encodeSegment = (r: Rand, s: string) => (r() < 0.5 ? encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x')) : s.replace(/[^\x21-\x7e]/g, (c) => `%${(c.charCodeAt(0) & 0xff).toString(16).padStart(2, '0')}`));

interface FuzzRequest { method: string; path: string; headers: Record<string, string>; body: Buffer }

function messageBody(r: Rand): unknown {
  const base: Record<string, unknown> = { content: r() < 0.8 ? weirdString(r, 200) : weirdValue(r) };
  if (r() < 0.4) base.user = r() < 0.7 ? { id: weirdString(r, 20), ...(r() < 0.5 ? { name: weirdString(r, 20) } : {}) } : weirdValue(r);
  if (r() < 0.3) base.conversation = r() < 0.8 ? weirdString(r, 20) : weirdValue(r);
  if (r() < 0.2) base.eventId = weirdString(r, 20);
  if (r() < 0.1) Object.assign(base, weirdValue(r));
  return base;
}

function chatBody(r: Rand, agents: string[]): unknown {
  const roles = ['system', 'developer', 'user', 'assistant', 'tool', 'nobody'];
  const messages = Array.from({ length: 1 + int(r, 4) }, () => ({
    role: pick(r, roles),
    content: r() < 0.7 ? weirdString(r, 100) : r() < 0.5 ? [{ type: 'text', text: weirdString(r, 50) }] : weirdValue(r),
  }));
  if (r() < 0.5) messages.push({ role: 'user', content: weirdString(r, 100) });
  return {
    model: r() < 0.6 ? pick(r, agents) : weirdString(r, 40),
    messages: r() < 0.9 ? messages : weirdValue(r),
    ...(r() < 0.5 ? { stream: r() < 0.8 ? true : weirdValue(r) } : {}),
    ...(r() < 0.3 ? { user: weirdString(r, 30) } : {}),
  };
}

function generate(r: Rand, o: FuzzOptions): FuzzRequest {
  const agent = r() < 0.7 ? pick(r, o.agents) : `${weirdString(r, 20)}/${weirdString(r, 20)}`;
  const [ns, name] = agent.split('/') as [string, string];
  const agentPath = `/v1/agents/${encodeSegment(r, ns)}/${encodeSegment(r, name ?? '')}`;
  const id = r() < 0.5 ? '00000000-0000-4000-8000-000000000000' : weirdString(r, 40);
  const headers: Record<string, string> = { host: '127.0.0.1', connection: 'close' };
  const roll = r();
  if (roll < 0.6) headers.authorization = `Bearer ${o.key}`;
  else if (roll < 0.8) headers.authorization = `Bearer ${weirdString(r, 30).replace(/[\r\n]/g, '')}`;
  else if (roll < 0.9) headers.authorization = weirdString(r, 30).replace(/[\r\n]/g, '');
  if (r() < 0.15) headers['idempotency-key'] = weirdString(r, 30).replace(/[\r\n]/g, '');
  if (r() < 0.15) headers['x-hermes-session-id'] = weirdString(r, 30).replace(/[\r\n]/g, '');
  if (r() < 0.05) headers[`x-${weirdString(r, 8).replace(/[^a-z]/g, 'a') || 'a'}`] = 'x'.repeat(int(r, 20_000));
  let body: Buffer = Buffer.alloc(0);
  const json = (v: unknown) => Buffer.from(JSON.stringify(v));
  const kind = int(r, 10);
  let method = 'GET';
  let path: string;
  if (kind <= 2) {
    method = 'POST';
    path = `${agentPath}/messages`;
    body = json(messageBody(r));
  } else if (kind <= 4) {
    method = 'POST';
    path = '/v1/chat/completions';
    body = json(chatBody(r, o.agents));
  } else if (kind === 5) {
    path = `${agentPath}/admissions/${encodeSegment(r, id)}${r() < 0.5 ? '/events' : ''}`;
  } else if (kind === 6) {
    method = pick(r, ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']);
    path = `/${Array.from({ length: 1 + int(r, 6) }, () => encodeSegment(r, weirdString(r, 30))).join('/')}${r() < 0.1 ? 'x'.repeat(int(r, 100_000)) : ''}`;
  } else if (kind === 7) {
    method = 'POST';
    path = r() < 0.5 ? `${agentPath}/messages` : '/v1/chat/completions';
    const size = r() < 0.3 ? (o.maxBodyBytes ?? 1_258_291) : int(r, 4_000);
    body = Buffer.from(Array.from({ length: size }, () => int(r, 256)));
  } else if (kind === 8) {
    method = 'POST';
    path = r() < 0.5 ? `${agentPath}/messages` : '/v1/chat/completions';
    body = Buffer.from(JSON.stringify(messageBody(r)).slice(0, 1 + int(r, 40)));
  } else {
    path = pick(r, ['/v1/models', '/healthz', '/readyz', '/metrics']);
  }
  if (body.length > 0 || method === 'POST') headers['content-type'] = r() < 0.85 ? 'application/json' : weirdString(r, 20).replace(/[\r\n]/g, '');
  return { method, path, headers, body };
}

function send(url: URL, req: FuzzRequest, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    let done = false;
    let head = '';
    const finish = (status: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(status);
    };
    const socket = connect(Number(url.port), url.hostname);
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    socket.on('error', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      if (m) finish(m[1]!);
    });
    const lines = [`${req.method} ${req.path} HTTP/1.1`, ...Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`)];
    if (req.body.length > 0 || req.method === 'POST') lines.push(`content-length: ${req.body.length}`);
    socket.write(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), req.body]));
  });
}

export async function fuzzGateway(o: FuzzOptions): Promise<FuzzResult> {
  const r = prng(o.seed ?? 1);
  const url = new URL(o.url);
  const statuses: Record<string, number> = {};
  const serverErrors: FuzzResult['serverErrors'] = [];
  const queue = Array.from({ length: o.requests }, () => generate(r, o));
  const lane = async () => {
    for (let req = queue.shift(); req; req = queue.shift()) {
      const status = await send(url, req, o.timeoutMs ?? 3_000);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status.startsWith('5') && serverErrors.length < 20) {
        serverErrors.push({ status: Number(status), request: `${req.method} ${req.path.slice(0, 200)} ${req.body.subarray(0, 300).toString('utf8')}` });
      }
    }
  };
  await Promise.all(Array.from({ length: o.lanes ?? 16 }, lane));
  return { statuses, serverErrors };
}
