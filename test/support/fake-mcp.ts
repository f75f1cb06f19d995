// A real MCP server for the MCP client's tests, built with the same SDK: streamable HTTP at /mcp
// (sessions, the standalone SSE stream for notifications) and the older HTTP+SSE transport at
// /sse + /messages. Its tools: echo, big (a result of n characters), slow (answers when released
// or cancelled), leak (fails with the Authorization header it got in its error text) and
// private_op (for the exclude list); tools can be added at run time (tools/list_changed goes to
// every session). It can be stopped and started again on the same port (disconnects), and it can
// demand an Authorization header, refusing others with a 401 that echoes what it got.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface ExtraTool {
  name: string;
  description: string;
  reply: string;
}

export interface FakeMcp {
  port: number;
  /** Streamable HTTP endpoint and the SSE endpoint on 127.0.0.1. */
  url: string;
  sseUrl: string;
  /** Every HTTP request: method, path, headers. */
  seen: { method: string; path: string; headers: IncomingMessage['headers'] }[];
  /** Tool calls by name, in order. */
  calls: string[];
  /** JSON-RPC methods the streamable HTTP endpoint received, in order. */
  methods: string[];
  /** Answers the waiting `slow` calls. */
  release(): void;
  /** Adds a tool to every session (each gets notifications/tools/list_changed). */
  addTool(t: ExtraTool): void;
  /** Refuse requests whose Authorization is not this (401, echoing what came). */
  requireAuth?: string;
  stop(): Promise<void>;
  /** Listens again on the same port (old sessions are gone: clients must reconnect). */
  start(): Promise<void>;
}

export async function startFakeMcp(): Promise<FakeMcp> {
  const extra: ExtraTool[] = [];
  const live = new Set<McpServer>();
  const streamable = new Map<string, StreamableHTTPServerTransport>();
  const sse = new Map<string, SSEServerTransport>();
  let waiting: (() => void)[] = [];
  let server: Server | undefined;
  let port = 0;

  const fake: FakeMcp = {
    port: 0, url: '', sseUrl: '', seen: [], calls: [], methods: [],
    release() { const w = waiting; waiting = []; for (const r of w) r(); },
    addTool(t) { extra.push(t); for (const s of live) registerExtra(s, t); },
    stop: async () => {
      fake.release();
      const s = server;
      server = undefined;
      for (const t of [...streamable.values(), ...sse.values()]) await t.close().catch(() => undefined);
      streamable.clear(); sse.clear(); live.clear();
      if (s) await new Promise<void>((done) => { s.closeAllConnections(); s.close(() => done()); });
    },
    start: () => listen(),
  };

  function registerExtra(s: McpServer, t: ExtraTool): void {
    s.registerTool(t.name, { description: t.description, inputSchema: {} }, () => {
      fake.calls.push(t.name);
      return { content: [{ type: 'text', text: t.reply }] };
    });
  }

  function mcpServer(): McpServer {
    const s = new McpServer({ name: 'fake-mcp', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    s.registerTool('echo', { description: 'Echo the text back.', inputSchema: { text: z.string() } }, ({ text }) => {
      fake.calls.push('echo');
      return { content: [{ type: 'text', text: `echo: ${text}` }] };
    });
    s.registerTool('big', { description: 'A result of n characters.', inputSchema: { chars: z.number().int() } }, ({ chars }) => {
      fake.calls.push('big');
      return { content: [{ type: 'text', text: 'x'.repeat(chars) }] };
    });
    s.registerTool('slow', { description: 'Answers when released.', inputSchema: {} }, async (_args, ctx) => {
      fake.calls.push('slow');
      await new Promise<void>((resolve) => { waiting.push(resolve); ctx.signal.addEventListener('abort', () => resolve()); });
      return { content: [{ type: 'text', text: 'slow done' }] };
    });
    s.registerTool('leak', { description: 'Fails, quoting the credentials it got.', inputSchema: {} }, (_args, ctx) => {
      fake.calls.push('leak');
      throw new Error(`upstream refused the credentials ${String(ctx.requestInfo?.headers.authorization)} (x-api-key ${String(ctx.requestInfo?.headers['x-api-key'])})`);
    });
    s.registerTool('private_op', { description: 'Must be excluded.', inputSchema: {} }, () => {
      fake.calls.push('private_op');
      return { content: [{ type: 'text', text: 'should not run' }] };
    });
    for (const t of extra) registerExtra(s, t);
    live.add(s);
    return s;
  }

  async function readJson(req: IncomingMessage): Promise<unknown> {
    if (req.method !== 'POST') return undefined;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { method?: string } | { method?: string }[];
    for (const m of Array.isArray(body) ? body : [body]) if (m.method) fake.methods.push(m.method);
    return body;
  }

  async function onStreamable(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    const sid = req.headers['mcp-session-id'];
    let t = typeof sid === 'string' ? streamable.get(sid) : undefined;
    if (!t && typeof sid === 'string') return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
    if (!t) {
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => { streamable.set(id, created); } });
      await mcpServer().connect(created);
      t = created;
    }
    await t.handleRequest(req, res, body);
  }

  async function onSse(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (req.method === 'GET' && url.pathname === '/sse') {
      const t = new SSEServerTransport('/messages', res);
      sse.set(t.sessionId, t);
      await mcpServer().connect(t);
      return;
    }
    const t = sse.get(url.searchParams.get('sessionId') ?? '');
    if (!t) return void res.writeHead(404).end('no such session');
    await t.handlePostMessage(req, res);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    fake.seen.push({ method: req.method ?? 'GET', path: url.pathname, headers: req.headers });
    if (fake.requireAuth && req.headers.authorization !== fake.requireAuth) {
      return void res.writeHead(401, { 'content-type': 'text/plain' }).end(`invalid credentials: ${String(req.headers.authorization)}`);
    }
    const route = url.pathname === '/mcp' ? onStreamable(req, res) : url.pathname === '/sse' || url.pathname === '/messages' ? onSse(req, res, url) : undefined;
    if (!route) return void res.writeHead(404).end('not here');
    route.catch((err: unknown) => { if (!res.headersSent) res.writeHead(500).end(String(err)); });
  }

  function listen(): Promise<void> {
    const s = createServer(handle);
    return new Promise((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        Object.assign(fake, { port, url: `http://127.0.0.1:${port}/mcp`, sseUrl: `http://127.0.0.1:${port}/sse` });
        resolve();
      });
    });
  }

  await listen();
  return fake;
}
