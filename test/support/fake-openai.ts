// A fake OpenAI-compatible model server at the HTTP wire level, driven by the real `openai` SDK.
// Each test scripts the answer per request; the server records every request it saw, which
// requests are in flight, and whether the client hung up (for abort and crash tests).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatRequestBody {
  model: string;
  messages: { role: string; content: string; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  stream?: boolean;
  [k: string]: unknown;
}

export interface Script {
  /** The answer text (streamed in `chunks` pieces when the client asks for a stream). */
  text?: string;
  chunks?: number;
  /** Resolve to let the answer go out; the request stays open (stalled) until then. */
  hold?: Promise<void>;
  /** Answer with this HTTP status and error body instead. */
  status?: number;
  errorMessage?: string;
  /** Answer 200 with exactly this body (a malformed response). */
  raw?: { contentType: string; body: string };
  headers?: Record<string, string>;
  /** The usage sent (anything, for a server that sends garbage); null: none at all. */
  usage?: Record<string, unknown> | null;
  /** Stream a one-character chunk every this many ms and never finish — a stream that never goes stale. */
  dribbleMs?: number;
  /** Tool calls the model makes (streamed as tool_call deltas; finish_reason "tool_calls"). */
  toolCalls?: { id?: string; name: string; arguments: string }[];
  /** Stream this many text chunks, then destroy the connection (a stream that breaks). */
  breakAfterChunks?: number;
  /** Stream the first text chunk, then stall (never finish) — a stale stream. */
  stallAfterFirstChunk?: boolean;
}

export type ScriptFn = (body: ChatRequestBody, req: IncomingMessage) => Script | Promise<Script>;

export interface SeenRequest {
  body: ChatRequestBody;
  headers: IncomingMessage['headers'];
  /** The request path (a base URL with a path prefix tells callers apart: `…/w1/v1`). */
  url: string;
  /** `performance.now()` when the request arrived, and when its response closed (answered or cut). */
  receivedAt: number;
  endedAt?: number;
  /** Set when the client closed the connection before the answer finished. */
  aborted: boolean;
  finished: boolean;
}

export interface FakeOpenAI {
  url: string;
  /** Base URL for the SDK (`…/v1`). */
  baseURL: string;
  requests: SeenRequest[];
  inFlight(): SeenRequest[];
  setScript(fn: ScriptFn): void;
  close(): Promise<void>;
}

/** The last user message of a request: the usual key tests script by. */
export const lastUser = (b: ChatRequestBody) => [...b.messages].reverse().find((m) => m.role === 'user')?.content ?? '';

/**
 * A model that does what the user's message says: "tool <name> <json arguments>" calls that tool
 * once, then answers "tool said: <its result>"; anything else is answered "ok".
 */
export function toolsAsTold(b: ChatRequestBody): Script {
  const turn = b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user'));
  const result = turn.find((m) => m.role === 'tool')?.content;
  if (result !== undefined) return { text: `tool said: ${result}` };
  const m = /^tool (\S+) (.*)$/s.exec(turn[0]?.content ?? '');
  return m ? { toolCalls: [{ id: 't1', name: m[1]!, arguments: m[2]! }] } : { text: 'ok' };
}

/** The JSON result a {@link toolsAsTold} reply repeats (a tool-loop guard note may follow on later lines). */
export const toldResult = (reply: string): Record<string, unknown> => JSON.parse(reply.replace(/^tool said: /, '').split('\n')[0]!) as Record<string, unknown>;

async function readJson(req: IncomingMessage): Promise<ChatRequestBody> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return JSON.parse(Buffer.concat(parts).toString('utf8')) as ChatRequestBody;
}

function split(text: string, n: number): string[] {
  if (n <= 1 || text.length <= 1) return [text];
  const size = Math.ceil(text.length / n);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** `total_tokens` added when both counts are numbers (a garbage usage goes out as given). */
function withTotal(u: Record<string, unknown>): Record<string, unknown> {
  const { prompt_tokens: p, completion_tokens: c } = u;
  return typeof p === 'number' && typeof c === 'number' && !('total_tokens' in u) ? { ...u, total_tokens: p + c } : u;
}

function answer(res: ServerResponse, body: ChatRequestBody, s: Script): void {
  const id = `chatcmpl-fake-${Math.random().toString(36).slice(2)}`;
  const created = Math.floor(Date.now() / 1000);
  const text = s.text ?? 'ok';
  const usage = s.usage === null ? undefined : withTotal(s.usage ?? { prompt_tokens: 10, completion_tokens: text.length });
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json', ...s.headers });
    res.end(JSON.stringify({ id, object: 'chat.completion', created, model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], ...(usage ? { usage } : {}) }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...s.headers });
  const chunk = (delta: object, finish: string | null, extra: object = {}) =>
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`);
  chunk({ role: 'assistant', content: '' }, null);
  if (s.dribbleMs !== undefined) {
    const timer = setInterval(() => chunk({ content: '.' }, null), s.dribbleMs);
    res.on('close', () => clearInterval(timer));
    return;
  }
  const pieces = s.toolCalls && s.text === undefined ? [] : split(text, s.chunks ?? 3);
  for (const [i, piece] of pieces.entries()) {
    if (s.breakAfterChunks !== undefined && i >= s.breakAfterChunks) { res.write(': broken\n\n', () => res.socket?.end()); return; }
    chunk({ content: piece }, null);
    if (s.stallAfterFirstChunk) return;
  }
  for (const [index, call] of (s.toolCalls ?? []).entries()) {
    const half = Math.ceil(call.arguments.length / 2);
    chunk({ tool_calls: [{ index, id: call.id ?? `call_${index}`, type: 'function', function: { name: call.name, arguments: call.arguments.slice(0, half) } }] }, null);
    chunk({ tool_calls: [{ index, function: { arguments: call.arguments.slice(half) } }] }, null);
  }
  chunk({}, s.toolCalls?.length ? 'tool_calls' : 'stop');
  if (usage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

export async function startFakeOpenAI(script: ScriptFn = () => ({ text: 'ok' })): Promise<FakeOpenAI> {
  let current = script;
  const requests: SeenRequest[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method === 'GET' && req.url?.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'gpt-test', object: 'model', created: 0, owned_by: 'fake' }] }));
        return;
      }
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      const body = await readJson(req);
      const seen: SeenRequest = { body, headers: req.headers, url: req.url, receivedAt: performance.now(), aborted: false, finished: false };
      requests.push(seen);
      res.on('close', () => {
        seen.endedAt = performance.now();
        if (!res.writableFinished) seen.aborted = true;
      });
      const s = await current(body, req);
      if (s.hold) await s.hold;
      if (seen.aborted) return;
      if (s.raw) {
        res.writeHead(200, { 'content-type': s.raw.contentType });
        res.end(s.raw.body);
      } else if (s.status && s.status >= 400) {
        res.writeHead(s.status, { 'content-type': 'application/json', ...s.headers });
        res.end(JSON.stringify({ error: { message: s.errorMessage ?? `fake error ${s.status}`, type: 'fake_error', code: null, param: null } }));
      } else {
        answer(res, body, s);
      }
      seen.finished = true;
    })().catch((err: unknown) => { res.writeHead(500).end(String(err)); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    baseURL: `${url}/v1`,
    requests,
    inFlight: () => requests.filter((r) => !r.finished && !r.aborted),
    setScript: (fn) => { current = fn; },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/**
 * A request's messages without the "# This conversation" block of the prompt's volatile layer
 * (start time, platform, model): what tests that script a conversation compare. A system message
 * left empty by it is dropped.
 */
export function withoutSessionFacts<M extends { role: string; content?: unknown }>(messages: readonly M[]): M[] {
  return messages.flatMap((m) => {
    if (m.role !== 'system' || typeof m.content !== 'string') return [m];
    const at = m.content.indexOf('# This conversation\n');
    if (at < 0) return [m];
    const rest = m.content.slice(0, at).trimEnd();
    return rest ? [{ ...m, content: rest }] : [];
  });
}
