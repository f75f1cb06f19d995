// A fake Slack Web API at the HTTP wire level, driven by the real `@slack/web-api` client: it
// checks the bot token (Authorization: Bearer, as the client sends it), records every call, answers
// like Slack (HTTP 200 with `{ok: false, error}` for a bad token or channel), and can answer 429
// with Retry-After. Plus the other direction: Events API requests signed as Slack signs them
// (v0 HMAC-SHA256), computed here independently of the gateway's code.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  /** The next `times` calls answer HTTP `status` (a 5xx outage). */
  failNext(times: number, status: number): void;
  close(): Promise<void>;
}

async function readArgs(req: IncomingMessage): Promise<Record<string, string>> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const raw = Buffer.concat(parts).toString('utf8');
  if ((req.headers['content-type'] ?? '').includes('application/json')) return JSON.parse(raw) as Record<string, string>;
  return Object.fromEntries(new URLSearchParams(raw));
}

export async function startFakeSlack(botToken: string): Promise<FakeSlack> {
  const calls: SlackCall[] = [];
  let limited = { times: 0, retryAfter: 1, skip: 0 };
  let failing = { times: 0, status: 503 };
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
      if (failing.times > 0) {
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
      if (token !== botToken) answer(200, { ok: false, error: 'invalid_auth' });
      else if (method === 'chat.postMessage') {
        if (!args.channel || !args.text) answer(200, { ok: false, error: args.channel ? 'no_text' : 'channel_not_found' });
        else answer(200, { ok: true, channel: args.channel, ts: `${ts++}.000100`, message: { text: args.text } });
      } else if (method === 'chat.update') answer(200, { ok: true, channel: args.channel, ts: args.ts, text: args.text });
      else answer(200, { ok: false, error: 'unknown_method' });
    })().catch((err: unknown) => { res.writeHead(500).end(String(err)); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    apiUrl: `${url}/api/`,
    calls,
    posts: () => calls.filter((c) => c.method === 'chat.postMessage' && c.ok),
    rateLimitNext: (times, retryAfterSeconds, skip = 0) => { limited = { times, retryAfter: retryAfterSeconds, skip }; },
    failNext: (times, status) => { failing = { times, status }; },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
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
