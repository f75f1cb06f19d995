// A fake Discord at the wire level: a real local HTTP server for the REST routes we call
// (checks `Authorization: Bot <token>`, records messages and typing indicators
// (`POST /channels/:id/typing`, 204), can answer 429 with `retry_after`),
// `GET /gateway/bot` pointing at its own WebSocket Gateway, which speaks the protocol subset the
// connector uses (HELLO op 10, IDENTIFY op 2 with a token check, heartbeats op 1 / ack op 11,
// READY, RESUME op 6 → RESUMED with replay of missed dispatches, MESSAGE_CREATE on demand), and the
// interaction webhooks (`PATCH …/messages/@original`, follow-ups). Plus the other direction:
// interaction requests signed with a test Ed25519 key, computed here with node:crypto.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface DiscordCall { method: string; path: string; body: Record<string, unknown>; auth: string | undefined; status: number }

export interface GatewayClient { ws: WebSocket; identified: boolean; token?: string; intents?: number; resumed: boolean; sessionId?: string }

export interface FakeDiscord {
  apiUrl: string;
  botUserId: string;
  applicationId: string;
  calls: DiscordCall[];
  /** Messages created successfully (channel posts and webhook follow-ups / @original edits). */
  messages(): DiscordCall[];
  /** Typing indicators triggered as the bot (`POST /channels/:id/typing`), in order. */
  typing(): DiscordCall[];
  rateLimitNext(times: number, retryAfterSeconds: number): void;
  /** Posts into these channels answer this error (Discord's JSON error: `{message, code}`). */
  refusedChannels: Map<string, { status: number; code: number; message: string }>;
  /** Channel types for GET /channels/:id (default 0, a text channel). */
  channels: Map<string, { type: number; parent_id?: string }>;
  /** Every IDENTIFY / RESUME seen, in order. */
  gatewayLog: { op: 'identify' | 'resume'; token: string; intents?: number }[];
  /** Open, identified (or resumed) Gateway connections. */
  live(): GatewayClient[];
  /** Dispatches MESSAGE_CREATE to every live connection; returns the message. */
  dispatchMessage(m: Partial<DiscordMessageInput> & { content: string; authorId: string; channelId: string }): Record<string, unknown>;
  /** Drops every Gateway connection abruptly (no close frame): clients should resume. */
  dropConnections(): void;
  close(): Promise<void>;
}

export interface DiscordMessageInput {
  id: string; content: string; authorId: string; channelId: string; guildId?: string; bot?: boolean;
  mentions?: string[]; replyToAuthor?: string;
}

let seq = 0;
export const snowflake = () => String(1_300_000_000_000_000_000n + BigInt(Date.now()) * 1000n + BigInt(++seq));

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const raw = Buffer.concat(parts).toString('utf8');
  return raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
}

export async function startFakeDiscord(botToken: string): Promise<FakeDiscord> {
  const calls: DiscordCall[] = [];
  const botUserId = '900000000000000001';
  const applicationId = '900000000000000002';
  const channels = new Map<string, { type: number; parent_id?: string }>();
  const refusedChannels: FakeDiscord['refusedChannels'] = new Map();
  const gatewayLog: FakeDiscord['gatewayLog'] = [];
  const clients = new Set<GatewayClient>();
  /** Dispatches per session, so a RESUME replays what came after the client's seq. */
  const sessions = new Map<string, { seq: number; events: { s: number; t: string; d: unknown }[] }>();
  let limited = { times: 0, retryAfter: 1 };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const path = url.pathname.replace(/^\/api\/v10/, '');
      const body = await readBody(req);
      const auth = req.headers.authorization;
      const answer = (status: number, out: unknown, headers: Record<string, string> = {}) => {
        calls.push({ method: req.method ?? '', path, body, auth, status });
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(out));
      };
      const webhook = /^\/webhooks\/(\d+)\/([^/]+)(\/messages\/(.+))?$/.exec(path);
      if (limited.times > 0 && req.method !== 'GET') {
        limited.times--;
        answer(429, { message: 'You are being rate limited.', retry_after: limited.retryAfter, global: false }, { 'retry-after': String(limited.retryAfter) });
        return;
      }
      if (webhook) {
        // Interaction webhooks: authenticated by the token in the path; a bot token must not be sent.
        if (webhook[1] !== applicationId || !webhook[2]!.startsWith('itok-') || auth !== undefined) answer(401, { message: '401: Unauthorized', code: 0 });
        else answer(200, { id: webhook[4] === '@original' ? `orig-${webhook[2]}` : snowflake(), content: body.content, channel_id: '0' });
        return;
      }
      if (auth !== `Bot ${botToken}`) { answer(401, { message: '401: Unauthorized', code: 0 }); return; }
      if (req.method === 'GET' && path === '/gateway/bot') {
        answer(200, { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/gateway`, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
        return;
      }
      const typing = /^\/channels\/(\d+)\/typing$/.exec(path);
      if (typing && req.method === 'POST') {
        calls.push({ method: 'POST', path, body, auth, status: 204 });
        res.writeHead(204).end();
        return;
      }
      const channel = /^\/channels\/(\d+)(\/messages(\/(\d+))?)?$/.exec(path);
      if (channel && req.method === 'GET' && !channel[2]) { answer(200, { id: channel[1], type: channels.get(channel[1]!)?.type ?? 0, parent_id: channels.get(channel[1]!)?.parent_id ?? null }); return; }
      if (channel && channel[2] && req.method === 'POST') {
        const content = String(body.content ?? '');
        if (!content || content.length > 2_000) { answer(400, { message: 'Invalid Form Body', code: 50035 }); return; }
        const refusal = refusedChannels.get(channel[1]!);
        if (refusal) { answer(refusal.status, { message: refusal.message, code: refusal.code }); return; }
        answer(200, { id: snowflake(), channel_id: channel[1], content });
        return;
      }
      if (channel && channel[4] && req.method === 'PATCH') { answer(200, { id: channel[4], channel_id: channel[1], content: body.content }); return; }
      if (req.method === 'POST' && path === `/applications/${applicationId}/commands`) { answer(201, { id: snowflake(), ...body }); return; }
      answer(404, { message: '404: Not Found', code: 0 });
    })().catch((err: unknown) => { res.writeHead(500).end(String(err)); });
  });

  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (!(req.url ?? '').startsWith('/gateway')) { socket.destroy(); return; }
    wss.handleUpgrade(req, socket, head, (ws) => onGateway(ws));
  });

  const sendTo = (c: GatewayClient, frame: unknown) => { if (c.ws.readyState === c.ws.OPEN) c.ws.send(JSON.stringify(frame)); };
  const dispatch = (c: GatewayClient, t: string, d: unknown) => {
    const s = sessions.get(c.sessionId!)!;
    const event = { s: ++s.seq, t, d };
    s.events.push(event);
    sendTo(c, { op: 0, ...event });
  };

  function onGateway(ws: WebSocket) {
    const c: GatewayClient = { ws, identified: false, resumed: false };
    clients.add(c);
    ws.on('close', () => clients.delete(c));
    ws.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 1_000 } }));
    ws.on('message', (raw) => {
      const f = JSON.parse(String(raw)) as { op: number; d: Record<string, unknown> | number | null };
      if (f.op === 1) { sendTo(c, { op: 11 }); return; }
      const d = (f.d ?? {}) as Record<string, unknown>;
      if (f.op === 2) {
        gatewayLog.push({ op: 'identify', token: String(d.token), intents: Number(d.intents) });
        if (d.token !== botToken) { ws.close(4004, 'Authentication failed.'); return; }
        c.identified = true; c.token = String(d.token); c.intents = Number(d.intents);
        c.sessionId = `sess-${snowflake()}`;
        sessions.set(c.sessionId, { seq: 0, events: [] });
        dispatch(c, 'READY', { v: 10, session_id: c.sessionId, resume_gateway_url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/gateway-resume`, user: { id: botUserId, username: 'hermes', bot: true }, guilds: [] });
      } else if (f.op === 6) {
        gatewayLog.push({ op: 'resume', token: String(d.token) });
        const s = sessions.get(String(d.session_id));
        if (d.token !== botToken || !s) { sendTo(c, { op: 9, d: false }); return; }
        c.identified = true; c.resumed = true; c.sessionId = String(d.session_id);
        for (const e of s.events.filter((e) => e.s > Number(d.seq ?? 0))) sendTo(c, { op: 0, ...e });
        sendTo(c, { op: 0, s: s.seq, t: 'RESUMED', d: {} });
      }
    });
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v10`;
  return {
    apiUrl: base, botUserId, applicationId, calls, channels, refusedChannels, gatewayLog,
    messages: () => calls.filter((c) => c.status === 200 && c.method !== 'GET' && (/\/messages$/.test(c.path) || /^\/webhooks\//.test(c.path))),
    typing: () => calls.filter((c) => c.status === 204 && /^\/channels\/\d+\/typing$/.test(c.path)),
    rateLimitNext: (times, retryAfterSeconds) => { limited = { times, retryAfter: retryAfterSeconds }; },
    live: () => [...clients].filter((c) => c.identified),
    dispatchMessage(m) {
      const d = {
        id: m.id ?? snowflake(), channel_id: m.channelId, ...(m.guildId ? { guild_id: m.guildId } : {}), type: m.replyToAuthor ? 19 : 0,
        content: m.content, author: { id: m.authorId, username: `user${m.authorId.slice(-3)}`, ...(m.bot ? { bot: true } : {}) },
        mentions: (m.mentions ?? []).map((id) => ({ id, username: 'someone' })),
        ...(m.replyToAuthor ? { referenced_message: { id: snowflake(), author: { id: m.replyToAuthor }, content: 'earlier' } } : {}),
      };
      for (const c of [...clients].filter((x) => x.identified)) dispatch(c, 'MESSAGE_CREATE', d);
      return d;
    },
    dropConnections: () => { for (const c of clients) c.ws.terminate(); },
    close: () => new Promise((r) => { for (const c of clients) c.ws.terminate(); wss.close(); server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** A test application key pair: the public key as the Developer Portal shows it (hex). */
export function discordTestKeys(): { publicKeyHex: string; privateKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return { publicKeyHex: der.subarray(der.length - 32).toString('hex'), privateKey };
}

/** Headers Discord sends with an interaction signed with `privateKey` at `timestamp` (Unix seconds). */
export function discordSignedHeaders(privateKey: KeyObject, body: string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = sign(null, Buffer.from(`${timestamp}${body}`), privateKey).toString('hex');
  return { 'content-type': 'application/json', 'x-signature-ed25519': signature, 'x-signature-timestamp': String(timestamp) };
}

/** An `/ask` interaction as Discord posts it (in a guild channel unless `dm`). */
export function askInteraction(o: { prompt: string; userId: string; channelId: string; applicationId: string; dm?: boolean; channelType?: number; parentId?: string; id?: string }): Record<string, unknown> {
  const user = { id: o.userId, username: `user${o.userId.slice(-3)}` };
  return {
    id: o.id ?? snowflake(), application_id: o.applicationId, type: 2, token: `itok-${snowflake()}`, version: 1,
    channel_id: o.channelId, channel: { id: o.channelId, type: o.channelType ?? (o.dm ? 1 : 0), ...(o.parentId ? { parent_id: o.parentId } : {}) },
    ...(o.dm ? { user } : { guild_id: '800000000000000001', member: { user, roles: [] } }),
    data: { id: '700000000000000001', name: 'ask', type: 1, options: [{ name: 'prompt', type: 3, value: o.prompt }] },
  };
}
