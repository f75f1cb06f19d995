// A fake Slack Web API at the HTTP wire level, driven by the real `@slack/web-api` client: it
// checks the bot token (Authorization: Bearer, as the client sends it), records every call, answers
// like Slack (HTTP 200 with `{ok: false, error}` for a bad token or channel), and can answer 429
// with Retry-After. Plus the other direction: Events API requests signed as Slack signs them
// (v0 HMAC-SHA256), computed here independently of the gateway's code.
// Socket Mode too: `apps.connections.open` (checks the app-level token) answers a ws:// URL served
// here; each socket gets `hello`, then `events_api` envelopes on demand (`sendEvent`), and every
// ack the client writes back is recorded. `disconnectSockets` sends Slack's `disconnect` message
// (a refresh), `redeliverUnacked` re-sends what nobody acknowledged (as Slack retries).
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface SlackCall {
  method: string;
  /** The call's arguments (the client sends them form-encoded or as JSON). */
  args: Record<string, string>;
  token: string | undefined;
  /** What we answered. */
  status: number;
  ok: boolean;
}

export interface FakeSlack {
  url: string;
  /** Base URL for the client and HERMES_SLACK_API_URL (`…/api/`). */
  apiUrl: string;
  calls: SlackCall[];
  /** Successful chat.postMessage calls, in order. */
  posts(): SlackCall[];
  /** The next `times` calls (after `skip` calls answered as usual) answer 429 with `Retry-After: retryAfterSeconds`. */
  rateLimitNext(times: number, retryAfterSeconds: number, skip?: number): void;
  /** The next `times` calls (after `skip` calls answered as usual) answer HTTP `status` (a 5xx outage). */
  failNext(times: number, status: number, skip?: number): void;
  /** The next `times` calls are recorded (status 0) and never answered: a send whose fate the client cannot know. */
  hangNext(times: number): void;
  /** chat.postMessage into these channels answers `{ok: false, error}` (an archived channel: `is_archived`). */
  refused: Map<string, string>;
  /** Socket Mode (only with an app token given to startFakeSlack). */
  socket: FakeSocketMode;
  close(): Promise<void>;
}

export interface SocketEnvelope {
  envelopeId: string;
  /** The Events API payload (an event_callback body). */
  payload: Record<string, unknown>;
  retryAttempt: number;
  /** Which socket (its number, from 1 in connection order) it went to. */
  socket: number;
}

export interface SocketAck { envelopeId: string; payload: unknown; socket: number; at: number }

export interface FakeSocketMode {
  /** Sockets opened so far (numbered from 1) and which of them are open now. */
  opened(): number;
  open(): number[];
  /** Every envelope sent, in order, and every ack received. */
  sent: SocketEnvelope[];
  acks: SocketAck[];
  /** Sends an `events_api` envelope to the newest open socket (throws when none is open); returns its envelope id. */
  sendEvent(payload: Record<string, unknown>, retryAttempt?: number): string;
  /** Re-sends every envelope not acknowledged yet (to the newest open socket, retry_attempt + 1), as Slack retries; returns their new ids. */
  redeliverUnacked(): string[];
  /** Whether an envelope was acknowledged. */
  acked(envelopeId: string): boolean;
  /** Asks every open socket to reconnect (Slack's `disconnect` message, reason `refresh_requested`). */
  disconnectSockets(reason?: string): void;
}

async function readArgs(req: IncomingMessage): Promise<Record<string, string>> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const raw = Buffer.concat(parts).toString('utf8');
  if ((req.headers['content-type'] ?? '').includes('application/json')) return JSON.parse(raw) as Record<string, string>;
  return Object.fromEntries(new URLSearchParams(raw));
}

interface LiveSocket { n: number; ws: WebSocket }

function fakeSocketMode(): FakeSocketMode & { attach(ws: WebSocket): void; closeAll(): void } {
  const sockets: LiveSocket[] = [];
  const sent: SocketEnvelope[] = [];
  const acks: SocketAck[] = [];
  let opened = 0;
  const live = () => sockets.filter((s) => s.ws.readyState === s.ws.OPEN);
  const send = (payload: Record<string, unknown>, retryAttempt: number): string => {
    const target = live().at(-1);
    if (!target) throw new Error('no Socket Mode connection is open');
    const envelopeId = randomUUID();
    sent.push({ envelopeId, payload, retryAttempt, socket: target.n });
    target.ws.send(JSON.stringify({
      type: 'events_api', envelope_id: envelopeId, payload, accepts_response_payload: false,
      retry_attempt: retryAttempt, retry_reason: retryAttempt > 0 ? 'timeout' : '',
    }));
    return envelopeId;
  };
  const acked = (id: string) => acks.some((a) => a.envelopeId === id);
  return {
    sent, acks,
    opened: () => opened,
    open: () => live().map((s) => s.n),
    sendEvent: (payload, retryAttempt = 0) => send(payload, retryAttempt),
    redeliverUnacked() {
      const pending = sent.filter((e) => !acked(e.envelopeId) && !sent.some((later) => later.payload === e.payload && later.retryAttempt > e.retryAttempt));
      return pending.map((e) => send(e.payload, e.retryAttempt + 1));
    },
    acked,
    disconnectSockets(reason = 'refresh_requested') {
      for (const s of live()) s.ws.send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host: 'fake-slack' } }));
    },
    attach(ws) {
      const s = { n: ++opened, ws };
      sockets.push(s);
      ws.on('message', (data) => {
        try {
          const msg = JSON.parse(String(data)) as { envelope_id?: string; payload?: unknown };
          if (msg.envelope_id) acks.push({ envelopeId: msg.envelope_id, payload: msg.payload, socket: s.n, at: Date.now() });
        } catch { /* not JSON: Slack ignores it too */ }
      });
      // Slack pings its clients; the client reconnects when it hears nothing for 30 s.
      const pinger = setInterval(() => { if (ws.readyState === ws.OPEN) ws.ping(); }, 5_000);
      ws.on('close', () => clearInterval(pinger));
      ws.send(JSON.stringify({ type: 'hello', num_connections: live().length, debug_info: { host: 'fake-slack', approximate_connection_time: 3600 }, connection_info: { app_id: 'A1' } }));
    },
    closeAll() { for (const s of sockets) s.ws.terminate(); },
  };
}

/**
 * `appToken` (an `xapp-` token) turns on Socket Mode: `apps.connections.open` called with it
 * answers a ws:// URL of this server.
 */
export async function startFakeSlack(botToken: string, appToken?: string): Promise<FakeSlack> {
  const calls: SlackCall[] = [];
  const socket = fakeSocketMode();
  const tickets = new Set<string>();
  let limited = { times: 0, retryAfter: 1, skip: 0 };
  let failing = { times: 0, status: 503, skip: 0 };
  let hanging = 0;
  const refused = new Map<string, string>();
  let ts = 1_700_000_000;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const method = (req.url ?? '').replace(/^\/api\//, '').split('?')[0] ?? '';
      const args = await readArgs(req);
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? args.token;
      const answer = (status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
        calls.push({ method, args, token, status, ok: body.ok === true });
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (hanging > 0 && method !== 'apps.connections.open') {
        hanging--;
        calls.push({ method, args, token, status: 0, ok: false });
        return;
      }
      if (failing.times > 0 && failing.skip > 0) failing.skip--;
      else if (failing.times > 0) {
        failing.times--;
        answer(failing.status, { ok: false, error: 'fatal_error' });
        return;
      }
      if (limited.times > 0 && limited.skip > 0) limited.skip--;
      else if (limited.times > 0) {
        limited.times--;
        answer(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(limited.retryAfter) });
        return;
      }
      if (method === 'apps.connections.open') {
        if (!appToken || token !== appToken) answer(200, { ok: false, error: token?.startsWith('xapp-') ? 'invalid_auth' : 'not_allowed_token_type' });
        else {
          const ticket = randomUUID();
          tickets.add(ticket);
          answer(200, { ok: true, url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/link/?ticket=${ticket}&app_id=A1` });
        }
      } else if (token !== botToken) answer(200, { ok: false, error: 'invalid_auth' });
      else if (method === 'chat.postMessage') {
        if (!args.channel || !args.text) answer(200, { ok: false, error: args.channel ? 'no_text' : 'channel_not_found' });
        else if (refused.has(args.channel)) answer(200, { ok: false, error: refused.get(args.channel) });
        else answer(200, { ok: true, channel: args.channel, ts: `${ts++}.000100`, message: { text: args.text } });
      } else if (method === 'chat.update') answer(200, { ok: true, channel: args.channel, ts: args.ts, text: args.text });
      else if (method === 'chat.delete') answer(200, { ok: true, channel: args.channel, ts: args.ts });
      else answer(200, { ok: false, error: 'unknown_method' });
    })().catch((err: unknown) => { res.writeHead(500).end(String(err)); });
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, sock, head) => {
    const ticket = new URL(req.url ?? '/', 'http://x').searchParams.get('ticket') ?? '';
    // A ticket is good for one connection, as Slack's are.
    if (!tickets.delete(ticket)) {
      sock.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, sock, head, (ws) => socket.attach(ws));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    apiUrl: `${url}/api/`,
    calls,
    posts: () => calls.filter((c) => c.method === 'chat.postMessage' && c.ok),
    rateLimitNext: (times, retryAfterSeconds, skip = 0) => { limited = { times, retryAfter: retryAfterSeconds, skip }; },
    failNext: (times, status, skip = 0) => { failing = { times, status, skip }; },
    refused,
    hangNext: (times) => { hanging = times; },
    socket,
    close: () => new Promise((r) => { socket.closeAll(); wss.close(); server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** Headers Slack sends with an Events API request signed with `secret` at `timestamp` (Unix seconds). */
export function slackSignedHeaders(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return { 'content-type': 'application/json', 'x-slack-request-timestamp': String(timestamp), 'x-slack-signature': signature };
}

let seq = 0;

export interface SlackMessageInput {
  type?: 'message' | 'app_mention';
  user: string;
  text: string;
  channel: string;
  channelType?: 'im' | 'channel' | 'group' | 'mpim';
  ts?: string;
  threadTs?: string;
  subtype?: string;
  botId?: string;
  eventId?: string;
}

/** An event_callback envelope as Slack posts it for one message event. */
export function slackEvent(m: SlackMessageInput, botUserId = 'UBOT'): { body: Record<string, unknown>; eventId: string; ts: string } {
  const eventId = m.eventId ?? `Ev${Date.now()}${++seq}`;
  const ts = m.ts ?? `${1_800_000_000 + seq}.${String(seq).padStart(6, '0')}`;
  const event: Record<string, unknown> = {
    type: m.type ?? 'message', user: m.user, text: m.text, channel: m.channel, ts, event_ts: ts,
    ...(m.channelType && m.type !== 'app_mention' ? { channel_type: m.channelType } : {}),
    ...(m.threadTs ? { thread_ts: m.threadTs } : {}),
    ...(m.subtype ? { subtype: m.subtype } : {}),
    ...(m.botId ? { bot_id: m.botId } : {}),
  };
  return {
    eventId, ts,
    body: {
      token: 'deprecated-verification-token', team_id: 'T1', api_app_id: 'A1', type: 'event_callback', event_id: eventId, event_time: 1_800_000_000,
      authorizations: [{ team_id: 'T1', user_id: botUserId, is_bot: true }], event,
    },
  };
}
