// A fake Anthropic Messages server at the HTTP wire level (SSE event stream, tool_use blocks,
// usage with cache fields), driven by the real `@anthropic-ai/sdk`. Records every request.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Block = { type: string; text?: string; cache_control?: unknown; [k: string]: unknown };

export interface AnthropicRequestBody {
  model: string;
  max_tokens: number;
  system?: Block[] | string;
  messages: { role: 'user' | 'assistant'; content: Block[] | string }[];
  tools?: { name: string; description?: string; input_schema: unknown }[];
  stream?: boolean;
  [k: string]: unknown;
}

export interface AnthropicScript {
  text?: string;
  toolUses?: { id?: string; name: string; input: Record<string, unknown> }[];
  /** The counts sent (anything, for a server that sends garbage); output_tokens goes out in message_delta. */
  usage?: { input_tokens?: unknown; output_tokens?: unknown; cache_creation_input_tokens?: unknown; cache_read_input_tokens?: unknown };
  status?: number;
  errorType?: string;
  errorMessage?: string;
  headers?: Record<string, string>;
  hold?: Promise<void>;
}

export interface SeenAnthropicRequest {
  body: AnthropicRequestBody;
  headers: IncomingMessage['headers'];
  aborted: boolean;
}

export interface FakeAnthropic {
  /** Base URL for the SDK (the SDK appends `/v1/messages`). */
  baseURL: string;
  requests: SeenAnthropicRequest[];
  setScript(fn: (body: AnthropicRequestBody) => AnthropicScript): void;
  close(): Promise<void>;
}

/** Text of the last user message (string or text blocks). */
export function lastUserText(b: AnthropicRequestBody): string {
  const m = [...b.messages].reverse().find((x) => x.role === 'user' && (typeof x.content === 'string' || x.content.some((c) => c.type === 'text')));
  if (!m) return '';
  return typeof m.content === 'string' ? m.content : m.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
}

function send(res: ServerResponse, event: string, data: object): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
}

function stream(res: ServerResponse, body: AnthropicRequestBody, s: AnthropicScript): void {
  const usage = s.usage ?? { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...s.headers });
  send(res, 'message_start', { message: { id: `msg_${Math.random().toString(36).slice(2)}`, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
  let index = 0;
  if (s.text !== undefined || !s.toolUses?.length) {
    const text = s.text ?? 'ok';
    send(res, 'content_block_start', { index, content_block: { type: 'text', text: '' } });
    for (let i = 0; i < text.length; i += Math.max(1, Math.ceil(text.length / 3))) send(res, 'content_block_delta', { index, delta: { type: 'text_delta', text: text.slice(i, i + Math.ceil(text.length / 3)) } });
    send(res, 'content_block_stop', { index });
    index++;
  }
  for (const t of s.toolUses ?? []) {
    const json = JSON.stringify(t.input);
    send(res, 'content_block_start', { index, content_block: { type: 'tool_use', id: t.id ?? `toolu_${index}`, name: t.name, input: {} } });
    send(res, 'content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(0, 3) } });
    send(res, 'content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(3) } });
    send(res, 'content_block_stop', { index });
    index++;
  }
  send(res, 'message_delta', { delta: { stop_reason: s.toolUses?.length ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  send(res, 'message_stop', {});
  res.end();
}

export async function startFakeAnthropic(script: (body: AnthropicRequestBody) => AnthropicScript = () => ({ text: 'ok' })): Promise<FakeAnthropic> {
  let current = script;
  const requests: SeenAnthropicRequest[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
        res.writeHead(404).end();
        return;
      }
      const parts: Buffer[] = [];
      for await (const c of req) parts.push(c as Buffer);
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as AnthropicRequestBody;
      const seen: SeenAnthropicRequest = { body, headers: req.headers, aborted: false };
      requests.push(seen);
      res.on('close', () => { if (!res.writableFinished) seen.aborted = true; });
      const s = current(body);
      if (s.hold) await s.hold;
      if (seen.aborted) return;
      if (s.status && s.status >= 400) {
        res.writeHead(s.status, { 'content-type': 'application/json', ...s.headers });
        res.end(JSON.stringify({ type: 'error', error: { type: s.errorType ?? 'api_error', message: s.errorMessage ?? `fake error ${s.status}` } }));
        return;
      }
      stream(res, body, s);
    })().catch((err: unknown) => { res.writeHead(500).end(String(err)); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    setScript: (fn) => { current = fn; },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
