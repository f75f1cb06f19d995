// A fake Telegram Bot API at the HTTP wire level, driven by the real grammY client: requests go to
// `/bot<token>/<method>`; a wrong token answers 401 as Telegram does. It records every call,
// answers sendMessage / editMessageText / sendChatAction / getMe / deleteWebhook / setWebhook / getWebhookInfo,
// and serves queued updates to getUpdates with Telegram's semantics: long polling up to
// `timeout` seconds, an `offset` confirms every update below it, a caller without an offset gets
// the earliest unconfirmed update, a second getUpdates ends the first with 409, and getUpdates
// while a webhook is set is a 409. It can answer 429 with `parameters.retry_after`, or fail calls
// of one method (before they take effect). Plus the other direction: webhook requests carrying
// the secret token.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TelegramCall {
  method: string;
  args: Record<string, unknown>;
  token: string;
  status: number;
  ok: boolean;
}

export interface FakeTelegram {
  url: string;
  bot: { id: number; username: string };
  calls: TelegramCall[];
  /** Successful sendMessage calls, in order. */
  sent(): TelegramCall[];
  /** Successful sendChatAction calls (the typing indicator), in order. */
  chatActions(): TelegramCall[];
  /** Queues an update (its update_id is assigned here) for getUpdates; returns it. */
  push(update: Record<string, unknown>): Record<string, unknown> & { update_id: number };
  /** Next update id the fake will assign (webhook tests build their own updates). */
  nextUpdateId(): number;
  /** update_ids served by getUpdates, in order (with repeats). */
  served: number[];
  /** Updates still unconfirmed. */
  pending(): number;
  webhookUrl(): string;
  /** The next `times` calls (after `skip` calls of the same kind answered as usual) answer 429 with retry_after. */
  rateLimitNext(times: number, retryAfterSeconds: number, skip?: number): void;
  /** The next `times` calls of `method` answer HTTP `status` before doing anything. */
  failNext(method: string, times: number, status: number): void;
  /** sendMessage into these chats (by String(chat_id)) answers this Bot API error: a blocked bot, a group that became a supergroup. */
  refusedChats: Map<string, { code: number; description: string; parameters?: Record<string, unknown> }>;
  close(): Promise<void>;
}

async function readArgs(req: import('node:http').IncomingMessage): Promise<Record<string, unknown>> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const raw = Buffer.concat(parts).toString('utf8');
  const query = Object.fromEntries(new URL(req.url ?? '/', 'http://x').searchParams);
  if (!raw) return query;
  if ((req.headers['content-type'] ?? '').includes('application/json')) return { ...query, ...(JSON.parse(raw) as Record<string, unknown>) };
  return { ...query, ...Object.fromEntries(new URLSearchParams(raw)) };
}

export async function startFakeTelegram(botToken: string, username = 'hermes_test_bot'): Promise<FakeTelegram> {
  const bot = { id: Number(botToken.split(':')[0]), username };
  const calls: TelegramCall[] = [];
  const served: number[] = [];
  const queue: (Record<string, unknown> & { update_id: number })[] = [];
  let nextId = 100_000;
  let messageId = 1;
  let webhook = '';
  let limited = { times: 0, retryAfter: 1, skip: 0 };
  const failing = new Map<string, { times: number; status: number }>();
  const refusedChats: FakeTelegram['refusedChats'] = new Map();
  let poller: { res: ServerResponse; finish: (status: number, body: Record<string, unknown>) => void; wake: () => void } | undefined;

  const server: Server = createServer((req, res) => {
    void (async () => {
      const m = /^\/bot([^/]+)\/([A-Za-z]+)/.exec((req.url ?? '').split('?')[0] ?? '');
      const args = await readArgs(req);
      const token = decodeURIComponent(m?.[1] ?? '');
      const method = m?.[2] ?? '';
      let done = false;
      const answer = (status: number, body: Record<string, unknown>) => {
        if (done) return;
        done = true;
        calls.push({ method, args, token, status, ok: body.ok === true });
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const error = (code: number, description: string, parameters?: Record<string, unknown>) => answer(code, { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) });
      if (!m) return error(404, 'Not Found');
      if (token !== botToken) return error(401, 'Unauthorized');
      const fail = failing.get(method);
      if (fail && fail.times > 0) {
        fail.times--;
        return answer(fail.status, { ok: false, error_code: fail.status, description: 'Bad Gateway' });
      }
      if (method !== 'getUpdates' && limited.times > 0) {
        if (limited.skip > 0) limited.skip--;
        else {
          limited.times--;
          return error(429, `Too Many Requests: retry after ${limited.retryAfter}`, { retry_after: limited.retryAfter });
        }
      }
      switch (method) {
        case 'getMe': return answer(200, { ok: true, result: { id: bot.id, is_bot: true, first_name: 'Hermes', username } });
        case 'deleteWebhook': webhook = ''; return answer(200, { ok: true, result: true });
        case 'setWebhook': webhook = String(args.url ?? ''); return answer(200, { ok: true, result: true });
        case 'getWebhookInfo': return answer(200, { ok: true, result: { url: webhook, pending_update_count: queue.length } });
        case 'sendChatAction':
          if (!args.chat_id) return error(400, 'Bad Request: chat not found');
          if (!['typing', 'upload_photo', 'upload_document', 'record_voice', 'upload_voice'].includes(String(args.action))) return error(400, 'Bad Request: wrong parameter action in request');
          return answer(200, { ok: true, result: true });
        case 'sendMessage': {
          const text = String(args.text ?? '');
          if (!args.chat_id) return error(400, 'Bad Request: chat not found');
          const refusal = refusedChats.get(String(args.chat_id));
          if (refusal) return error(refusal.code, refusal.description, refusal.parameters);
          if (!text.trim()) return error(400, 'Bad Request: message text is empty');
          if (text.length > 4_096) return error(400, 'Bad Request: message is too long');
          return answer(200, { ok: true, result: { message_id: messageId++, date: Math.floor(Date.now() / 1000), chat: { id: args.chat_id, type: 'private' }, text } });
        }
        case 'editMessageText': return answer(200, { ok: true, result: { message_id: Number(args.message_id), chat: { id: args.chat_id }, text: args.text } });
        case 'getUpdates': return getUpdates(args, answer, error, res);
        default: return error(404, 'Not Found: method not found');
      }
    })().catch((err: unknown) => { res.writeHead(500).end(String(err)); });
  });

  function getUpdates(args: Record<string, unknown>, answer: (s: number, b: Record<string, unknown>) => void, error: (c: number, d: string) => void, res: ServerResponse): void {
    if (webhook) return error(409, 'Conflict: can\'t use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first');
    if (args.offset !== undefined) {
      const offset = Number(args.offset);
      while (queue.length > 0 && queue[0]!.update_id < offset) queue.shift();
    }
    // A newer getUpdates ends an older one still open (Telegram: "terminated by other getUpdates request").
    poller?.finish(409, { ok: false, error_code: 409, description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running' });
    const limit = Number(args.limit ?? 100);
    const deliver = () => {
      const batch = queue.slice(0, limit);
      served.push(...batch.map((u) => u.update_id));
      answer(200, { ok: true, result: batch });
    };
    if (queue.length > 0) return deliver();
    const timeoutMs = Number(args.timeout ?? 0) * 1_000;
    const me = {
      res,
      finish: (status: number, body: Record<string, unknown>) => { clearTimeout(timer); if (poller === me) poller = undefined; answer(status, body); },
      wake: () => { clearTimeout(timer); if (poller === me) poller = undefined; deliver(); },
    };
    const timer = setTimeout(() => me.wake(), timeoutMs);
    poller = me;
    res.on('close', () => { clearTimeout(timer); if (poller === me) poller = undefined; });
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    bot,
    calls,
    served,
    sent: () => calls.filter((c) => c.method === 'sendMessage' && c.ok),
    chatActions: () => calls.filter((c) => c.method === 'sendChatAction' && c.ok),
    push(update) {
      const u = { ...update, update_id: nextId++ };
      queue.push(u);
      poller?.wake();
      return u;
    },
    nextUpdateId: () => nextId++,
    pending: () => queue.length,
    webhookUrl: () => webhook,
    rateLimitNext: (times, retryAfterSeconds, skip = 0) => { limited = { times, retryAfter: retryAfterSeconds, skip }; },
    failNext: (method, times, status) => { failing.set(method, { times, status }); },
    refusedChats,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

let seq = 0;

export interface TelegramMessageInput {
  chat: { id: number; type: 'private' | 'group' | 'supergroup'; is_forum?: boolean };
  from: { id: number; is_bot?: boolean; username?: string };
  text: string;
  entities?: { type: string; offset: number; length: number }[];
  threadId?: number;
  replyTo?: { message_id: number; from: { id: number; is_bot: boolean; username?: string } };
}

/** A message update as Telegram sends it (update_id left to the caller or the fake). */
export function telegramMessage(m: TelegramMessageInput): Record<string, unknown> {
  const messageId = 5_000 + ++seq;
  // Telegram marks mentions and commands itself; tests may give entities, else they are found here.
  const entities = m.entities ?? [...m.text.matchAll(/(^\/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?)|(@[A-Za-z0-9_]{5,})/g)]
    .map((x) => ({ type: x[1] ? 'bot_command' : 'mention', offset: x.index, length: x[0].length }));
  return {
    message: {
      message_id: messageId,
      from: { is_bot: false, first_name: 'User', ...m.from },
      chat: m.chat,
      date: Math.floor(Date.now() / 1000),
      text: m.text,
      ...(entities.length ? { entities } : {}),
      ...(m.threadId !== undefined ? { message_thread_id: m.threadId, is_topic_message: true } : {}),
      ...(m.replyTo ? { reply_to_message: { ...m.replyTo, date: 0, chat: m.chat } } : {}),
    },
  };
}
