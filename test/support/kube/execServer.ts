// `/exec/{ns}/{pod}/{container}` of the test kubelet: the WebSocket streaming endpoint the
// apiserver proxies `pods/exec` to as is, because the Node declares ExtendWebSocketsToKubelet
// (k8s.io/kubernetes pkg/registry/core/pod/rest/subresources.go). Query as the kubelet reads it
// (remotecommand.NewOptions; the apiserver renames the pods/exec options on the way):
// repeated `command`, `input`/`output`/`error`/`tty` = 1|true. Failures before the upgrade are
// HTTP errors with a metav1.Status body (400 bad request, 404 unknown pod, 409 not running).
//
// Unlike the real kubelet, a client that disconnects kills the exec'd process tree: tests should
// not leak processes. The Pod's end kills them too, since they live in its pid namespace.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { ChannelStream, EXEC_PROTOCOLS, pickProtocol, STDERR, STDIN, STDOUT } from './execStream.js';
import { startPodExec, type ExecTarget } from './podExec.js';

/** The answer to "where do I run an exec into this container": a target, or why not. */
export type ExecLookup = (namespace: string, pod: string, container: string) =>
  { ok: true; target: ExecTarget } | { ok: false; code: 404 | 409; message: string };

interface ExecRequest {
  ns: string;
  pod: string;
  container: string;
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

const EXEC_PATH = /^\/exec\/([^/]+)\/([^/]+)\/(?:[^/]+\/)?([^/]+)$/;
const flag = (query: URLSearchParams, name: string): boolean => ['1', 'true'].includes(query.get(name) ?? '');

function reject(socket: Duplex, code: number, message: string): void {
  const reason = { 400: 'BadRequest', 404: 'NotFound', 409: 'Conflict' }[code] ?? 'InternalError';
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
  const text = { 400: 'Bad Request', 404: 'Not Found', 409: 'Conflict' }[code] ?? 'Internal Server Error';
  socket.end(`HTTP/1.1 ${code} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** Parses and checks the request as remotecommand.NewOptions does; a string is the 400 message. */
function parseRequest(req: IncomingMessage): ExecRequest | string {
  const url = new URL(req.url ?? '/', 'https://localhost');
  const match = EXEC_PATH.exec(url.pathname);
  if (!match) return `no exec route for ${url.pathname}`;
  const [ns, pod, container] = match.slice(1).map(decodeURIComponent) as [string, string, string];
  const q = url.searchParams;
  const request = { ns, pod, container, command: q.getAll('command'), stdin: flag(q, 'input'), stdout: flag(q, 'output'), stderr: flag(q, 'error') };
  if (request.command.length === 0) return 'no command given: pass it as command=…&command=…';
  if (!request.stdin && !request.stdout && !request.stderr) return 'you must specify at least 1 of stdin, stdout, stderr';
  if (flag(q, 'tty')) return 'the test kubelet does not allocate TTYs: exec without -t / tty=false';
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
    return `the test kubelet streams exec over WebSocket only (${EXEC_PROTOCOLS.join(', ')}), not ${req.headers.upgrade ?? 'a plain request'}`;
  }
  return request;
}

/** Runs the command and relays its streams until it ends or the client goes away. */
function serveExec(ws: WebSocket, request: ExecRequest, target: ExecTarget): void {
  const stream = new ChannelStream(ws);
  // Both kubelet implementations first send an empty frame on the lowest writable channel.
  stream.send(request.stdout ? STDOUT : request.stderr ? STDERR : 3, Buffer.alloc(0));
  const exec = startPodExec(target, request.command, request.stdin);
  let ended = false;
  exec.child.stdout?.on('data', (chunk: Buffer) => { if (request.stdout) stream.send(STDOUT, chunk); });
  exec.child.stderr?.on('data', (chunk: Buffer) => { if (request.stderr) stream.send(STDERR, chunk); });
  exec.child.stdin?.on('error', () => undefined); // the command may exit without reading stdin
  ws.on('message', (message) => {
    const incoming = stream.decode(message);
    if (!incoming) return;
    if ('closed' in incoming) {
      if (incoming.closed === STDIN) exec.child.stdin?.end();
    } else if (incoming.channel === STDIN && request.stdin) {
      exec.child.stdin?.write(incoming.data);
    }
  });
  ws.on('close', () => { if (!ended) exec.kill(); });
  ws.on('error', () => exec.kill());
  void exec.exited.then((code) => {
    ended = true;
    if (ws.readyState !== 1) return;
    if (code === 127 && exec.child.pid === undefined) stream.sendFailure('could not start nsenter: is util-linux installed?');
    else stream.sendExit(code);
    ws.close(1000);
  });
}

/** Creates the handler for the HTTPS server's 'upgrade' event, and a way to end every session. */
export function execUpgradeHandler(lookup: ExecLookup): {
  onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  closeAll(): void;
} {
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (offered) => pickProtocol(offered) });
  return {
    onUpgrade(req, socket, head) {
      const request = parseRequest(req);
      if (typeof request === 'string') return reject(socket, EXEC_PATH.test(new URL(req.url ?? '/', 'https://x').pathname) ? 400 : 404, request);
      const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
      if (!pickProtocol(offered)) return reject(socket, 400, `requested protocol(s) are not supported: [${offered.join(' ')}]; supports [${EXEC_PROTOCOLS.join(' ')}]`);
      const found = lookup(request.ns, request.pod, request.container);
      if (!found.ok) return reject(socket, found.code, found.message);
      // The kubelet routes POST and GET alike; ws insists on GET, as RFC 6455 does.
      req.method = 'GET';
      wss.handleUpgrade(req, socket, head, (ws) => serveExec(ws, request, found.target));
    },
    closeAll() {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}
