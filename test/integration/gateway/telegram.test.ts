// Telegram end to end: updates posted to the real gateway's webhook (secret-token header) or
// long-polled by the real connector from a fake Bot API server (test/support/fake-telegram.ts,
// driven by grammY over HTTP), admitted in Postgres, run by the real worker against a fake model,
// and delivered through the delivery ledger back to the fake.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledAgent } from '../../../services/core/index.js';
import { startGateway, type GatewayDeps, type RunningGateway } from '../../../services/gateway/index.js';
import { createContext } from '../../../services/gateway/context.js';
import { startConnectors, type ConnectorSupervisor } from '../../../services/gateway/connectors/index.js';
import { telegramPolling } from '../../../services/gateway/connectors/telegram.js';
import { staticSecrets, type SecretData } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { startFakeTelegram, telegramMessage, type FakeTelegram, type TelegramMessageInput } from '../../support/fake-telegram.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, deliveredObligation, openTestRuntime, startTestWorker, testModelSecret, type TestRuntime } from '../../support/system.js';

const HOOK_TOKEN = '111111:hook-bot-token-AAAA';
const POLL_TOKEN = '222222:poll-bot-token-BBBB';
const WEBHOOK_SECRET = 'telegram-webhook-secret_0123456789';
const hookSecret: SecretData = { namespace: 'default', name: 'telegram', data: { TELEGRAM_BOT_TOKEN: HOOK_TOKEN, TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET } };
const pollSecret: SecretData = { namespace: 'default', name: 'telegram-poll', data: { TELEGRAM_BOT_TOKEN: POLL_TOKEN } };
const ALICE = 1001;
const BOB = 1002;
const MALLORY = 6666;
const MAX_BODY = 64 * 1024;

type Platform = NonNullable<CompiledAgent['platforms']>[number];
const tgPlatform: Platform = { type: 'telegram', credentialsSecret: 'telegram', allowlist: [String(ALICE), String(BOB)], allowAll: false, dmPairing: false, groupPolicy: 'mention' };

let database: TestDatabase;
let model: FakeOpenAI;
let hookTg: FakeTelegram;
let pollTg: FakeTelegram;
let rt: TestRuntime;
let worker: RunningWorker;
let gw: RunningGateway;
let deps: GatewayDeps;
let hook: string;

// Under Telegram's own 4 096: a text past it can reach the gateway.
const MAX_CHARS = 2_000;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((body) => {
    const q = lastUser(body);
    if (q.startsWith('long ')) return { text: `${'a'.repeat(4_090)} ${'b'.repeat(4_090)} ${'c'.repeat(100)}` };
    return { text: `answer to: ${q}` };
  });
  hookTg = await startFakeTelegram(HOOK_TOKEN);
  pollTg = await startFakeTelegram(POLL_TOKEN, 'hermes_poll_bot');
  // No progress indicator ("working…", typing) on a slow machine's turn: these tests count exact calls.
  rt = await openTestRuntime(testConfig(database.url, { HERMES_TELEGRAM_API_URL: hookTg.url, HERMES_PROGRESS_DELAY_SECONDS: 600, HERMES_MAX_BODY_BYTES: MAX_BODY, HERMES_MAX_MESSAGE_CHARS: MAX_CHARS }), 'telegram');
  await createTestAgent(rt, model.baseURL, { platforms: [tgPlatform] });
  // Long polling, against its own Bot API URL (the per-agent apiUrl override).
  await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'poller' }, platforms: [{ ...tgPlatform, credentialsSecret: 'telegram-poll', allowlist: [], allowAll: true, mode: 'polling', apiUrl: pollTg.url }] });
  worker = await startTestWorker(rt, { secrets: [hookSecret, pollSecret] });
  deps = { ...rt, secrets: staticSecrets([testModelSecret, hookSecret, pollSecret]) };
  // This gateway serves the webhook only; the polling tests run their own two replicas.
  gw = await startGateway({ ...deps, config: { ...rt.config, HERMES_CONNECTORS: 'off' } });
  hook = `${gw.url}/hooks/telegram/default/demo`;
});

afterAll(async () => {
  await gw?.close();
  await worker?.close();
  await rt?.close();
  await hookTg?.close();
  await pollTg?.close();
  await model?.close();
  await database?.drop();
});

const post = (body: string, headers: Record<string, string>, url = hook) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
const secretHeader = (secret = WEBHOOK_SECRET) => ({ 'x-telegram-bot-api-secret-token': secret });
const update = (m: TelegramMessageInput): { update_id: number; message?: unknown } => ({ update_id: hookTg.nextUpdateId(), ...telegramMessage(m) });
const send = async (m: TelegramMessageInput) => {
  const u = update(m);
  const res = await post(JSON.stringify(u), secretHeader());
  expect(res.status).toBe(200);
  return u;
};
const dm = (from: number, text: string): TelegramMessageInput => ({ chat: { id: from, type: 'private' }, from: { id: from }, text });
const group = (from: number, text: string, extra: Partial<TelegramMessageInput> = {}): TelegramMessageInput => ({ chat: { id: -100_123, type: 'supergroup' }, from: { id: from }, text, ...extra });

async function count(table: 'admissions' | 'inbound_events'): Promise<number> {
  const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}

async function admissionOf(eventId: string): Promise<{ id: string; sessionKey: string; content: string }> {
  return eventually(async () => {
    const { rows } = await rt.db.pool.query<{ id: string; sessionKey: string; content: string }>(
      `SELECT a.id, s.session_key AS "sessionKey", a.content FROM inbound_events e JOIN admissions a ON a.id = e.admission_id JOIN sessions s ON s.id = a.session_id WHERE e.event_id = $1`, [eventId]);
    return rows[0];
  }, `the admission of ${eventId}`);
}

const hookEvent = (u: { update_id: number }) => `111111:${u.update_id}`;
const sentWith = (tg: FakeTelegram, text: string) => tg.sent().filter((c) => c.args.text === text);
const delivered = (tg: FakeTelegram, text: string) => eventually(() => sentWith(tg, text)[0], `a Telegram message "${text}"`);

describe('Telegram webhook requests the gateway refuses, touching nothing', () => {
  it('refuses a missing, wrong or repeated secret token, an unknown agent and a polling agent with one 401', async () => {
    const body = JSON.stringify(update(dm(ALICE, 'hello')));
    const cases: Record<string, Record<string, string>> = {
      missing: {},
      wrong: secretHeader('not-the-secret'),
      'a prefix': secretHeader(WEBHOOK_SECRET.slice(0, -1)),
      empty: secretHeader(''),
    };
    const texts = new Set<string>();
    for (const [what, headers] of Object.entries(cases)) {
      const res = await post(body, headers);
      expect(res.status, what).toBe(401);
      texts.add(await res.text());
    }
    for (const url of [`${gw.url}/hooks/telegram/default/nobody`, `${gw.url}/hooks/telegram/default/poller`]) {
      const res = await post(body, secretHeader(), url);
      expect(res.status, url).toBe(401);
      texts.add(await res.text());
    }
    // One answer whatever the reason: it tells nobody which agents exist or how they are set up.
    expect(texts.size).toBe(1);
    expect(JSON.parse([...texts][0]!)).toMatchObject({ error: { code: 'HERMES_SIGNATURE_INVALID' } });
    expect(await count('admissions')).toBe(0);
    expect(await count('inbound_events')).toBe(0);
  });

  it('refuses malformed JSON and bodies without an update_id (400), oversized bodies (413) and other media types (415); drops an update of a shape it refuses (200)', async () => {
    expect((await post('{"update_id": ', secretHeader())).status).toBe(400);
    const noId = await post(JSON.stringify({ message: {} }), secretHeader());
    expect(noId.status).toBe(400);
    expect(((await noId.json()) as { error: { message: string } }).error.message).toContain('update_id');
    // An update Telegram would re-send for a day (and slow the bot's others meanwhile) if refused: dropped, as polling drops it.
    const badMessage = await post(JSON.stringify({ update_id: 5, message: { message_id: 'x' } }), secretHeader());
    expect(badMessage.status).toBe(200);
    expect((await post(JSON.stringify({ update_id: 6, padding: 'x'.repeat(MAX_BODY) }), secretHeader())).status).toBe(413);
    expect((await fetch(hook, { method: 'POST', headers: { 'content-type': 'text/plain', ...secretHeader() }, body: 'hi' })).status).toBe(415);
    expect(await count('admissions')).toBe(0);
  });

  it('acknowledges bot messages, edits and unaddressed group chatter without admitting them', async () => {
    await send({ ...dm(ALICE, 'beep'), from: { id: 4242, is_bot: true } });
    await send(group(ALICE, 'just chatting'));
    await send(group(ALICE, '/help@some_other_bot'));
    await send(group(ALICE, 'reply to someone', { replyTo: { message_id: 1, from: { id: BOB, is_bot: false } } }));
    const edit = await post(JSON.stringify({ update_id: hookTg.nextUpdateId(), edited_message: telegramMessage(dm(ALICE, 'edited')).message }), secretHeader());
    expect(edit.status).toBe(200);
    expect(await count('admissions')).toBe(0);
  });
});

describe('Telegram conversations over the webhook', () => {
  it('answers a DM in the DM, once, however often Telegram re-sends the update', async () => {
    const u = await send(dm(ALICE, 'what is in my DM?'));
    const reply = await delivered(hookTg, 'answer to: what is in my DM?');
    expect(reply.args).toMatchObject({ chat_id: ALICE });
    expect(reply.args.reply_parameters).toBeUndefined();
    expect(reply.token).toBe(HOOK_TOKEN);
    // Telegram re-sends an update it did not see acknowledged: same update_id, one admission.
    expect((await post(JSON.stringify(u), secretHeader())).status).toBe(200);
    const adm = await admissionOf(hookEvent(u));
    expect(adm.sessionKey).toBe(`agent:default/demo:telegram:dm:${ALICE}`);
    const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbound_events WHERE event_id = $1`, [hookEvent(u)]);
    expect(rows[0]!.n).toBe(1);
    await deliveredObligation(rt.db.pool, adm.id, 'delivered');
    expect(model.requests.filter((r) => lastUser(r.body) === 'what is in my DM?')).toHaveLength(1);
    expect(sentWith(hookTg, 'answer to: what is in my DM?')).toHaveLength(1);
  });

  // A text past HERMES_MAX_MESSAGE_CHARS was dropped with a warning in the log: the user heard nothing.
  it('answers a DM past HERMES_MAX_MESSAGE_CHARS once with the limit, never calling the model', async () => {
    const long = 'x'.repeat(MAX_CHARS + 1);
    const u = await send(dm(ALICE, long));
    const reply = await delivered(hookTg, `Your message has ${MAX_CHARS + 1} characters; this agent takes at most ${MAX_CHARS}. Please shorten it or send it in parts.`);
    expect(reply.args).toMatchObject({ chat_id: ALICE });
    expect((await post(JSON.stringify(u), secretHeader())).status).toBe(200); // Telegram re-sends it: answered no second time
    const adm = await admissionOf(`too-long:${hookEvent(u)}`);
    expect(adm.content).not.toContain('xxxx');
    await deliveredObligation(rt.db.pool, adm.id, 'delivered');
    expect(sentWith(hookTg, reply.args.text as string)).toHaveLength(1);
    expect(model.requests.filter((r) => lastUser(r.body) === long)).toHaveLength(0);
  });

  it('in a group answers a @mention (mention removed), a reply to the bot and a /command, each person in their own session', async () => {
    const mention = await send(group(ALICE, `@${hookTg.bot.username} what time is it`));
    const r1 = await delivered(hookTg, 'answer to: what time is it');
    expect(r1.args).toMatchObject({ chat_id: -100_123, reply_parameters: { message_id: (mention.message as { message_id: number }).message_id } });
    const adm1 = await admissionOf(hookEvent(mention));
    expect(adm1.sessionKey).toBe(`agent:default/demo:telegram:group:-100123:${ALICE}`);

    const reply = await send(group(BOB, 'and tomorrow?', { replyTo: { message_id: 42, from: { id: hookTg.bot.id, is_bot: true, username: hookTg.bot.username } } }));
    await delivered(hookTg, 'answer to: and tomorrow?');
    expect((await admissionOf(hookEvent(reply))).sessionKey).toBe(`agent:default/demo:telegram:group:-100123:${BOB}`);

    const cmd = await send(group(ALICE, `/usage@${hookTg.bot.username}`));
    expect((await admissionOf(hookEvent(cmd))).content).toBe('/usage');
  });

  it('keeps a forum topic as one session shared by everyone in it, and replies into the topic', async () => {
    const forum = { id: -100_555, type: 'supergroup' as const, is_forum: true };
    const a = await send({ chat: forum, from: { id: ALICE }, text: `@${hookTg.bot.username} topic question one`, threadId: 7 });
    const ra = await delivered(hookTg, 'answer to: topic question one');
    expect(ra.args).toMatchObject({ chat_id: -100_555, message_thread_id: 7 });
    const b = await send({ chat: forum, from: { id: BOB }, text: `@${hookTg.bot.username} topic question two`, threadId: 7 });
    await delivered(hookTg, 'answer to: topic question two');
    const [sa, sb] = [await admissionOf(hookEvent(a)), await admissionOf(hookEvent(b))];
    expect(sa.sessionKey).toBe('agent:default/demo:telegram:group:-100555:7');
    expect(sb.sessionKey).toBe(sa.sessionKey);
    // The second turn saw the first exchange of the topic.
    const second = model.requests.find((r) => lastUser(r.body) === 'topic question two')!;
    expect(second.body.messages.map((m) => m.content)).toContain('topic question one');
  });

  it('gives a stranger one refusal and never calls the model for them', async () => {
    const calls = model.requests.length;
    await send(dm(MALLORY, 'let me in'));
    await send(dm(MALLORY, 'please?'));
    const refusal = await eventually(() => hookTg.sent().find((c) => c.args.chat_id === MALLORY), 'the refusal');
    expect(refusal.args.text).toMatch(/allowed/);
    await new Promise((r) => setTimeout(r, 300));
    expect(hookTg.sent().filter((c) => c.args.chat_id === MALLORY)).toHaveLength(1);
    expect(model.requests.length).toBe(calls);
  });

  it('splits a long reply at 4 096 characters, in order', async () => {
    await send(dm(BOB, 'long story'));
    const pieces = await eventually(() => {
      const p = hookTg.sent().filter((c) => c.args.chat_id === BOB && /^[abc]{100}/.test(String(c.args.text)));
      return p.length === 3 ? p : undefined;
    }, 'three pieces');
    expect(pieces.map((p) => String(p.args.text).length).every((n) => n <= 4_096)).toBe(true);
    expect(pieces.map((p) => String(p.args.text)[0])).toEqual(['a', 'b', 'c']);
  });

  it('honours a 429 retry_after without spending an attempt, then delivers once', async () => {
    hookTg.rateLimitNext(1, 1);
    const u = await send(dm(ALICE, 'rate limited please'));
    await delivered(hookTg, 'answer to: rate limited please');
    const adm = await admissionOf(hookEvent(u));
    const ob = await deliveredObligation(rt.db.pool, adm.id, 'delivered');
    expect(ob.attempts).toBe(1);
    expect(hookTg.calls.filter((c) => c.method === 'sendMessage' && String(c.args.text).includes('rate limited please')).map((c) => c.status)).toEqual([429, 200]);
  });
});

describe('Telegram long polling', () => {
  it('one replica polls; when it stops the other continues: no update admitted twice, none lost', async () => {
    const opts = { refreshMs: 200, leader: { pingMs: 200, pingTimeoutMs: 1_000, initialBackoffMs: 100, maxBackoffMs: 300 } };
    const ctxA = createContext(deps);
    const ctxB = createContext(deps);
    const a: ConnectorSupervisor = startConnectors(ctxA, [telegramPolling], opts);
    const b: ConnectorSupervisor = startConnectors(ctxB, [telegramPolling], opts);
    const pollDm = (text: string) => pollTg.push(telegramMessage({ chat: { id: 3003, type: 'private' }, from: { id: 3003 }, text }));
    const pollEvent = (u: { update_id: number }) => `222222:${u.update_id}`;
    const askedFor = (text: string) => model.requests.filter((r) => lastUser(r.body) === text).length;
    try {
      await eventually(() => a.leading().length + b.leading().length === 1, 'one replica polls');
      expect(a.campaigns()).toEqual(['telegram-poll:222222']);
      // The lease is won before the poller's first call (deleteWebhook) has gone out and been answered.
      await eventually(() => pollTg.calls.find((c) => c.method === 'deleteWebhook'), 'deleteWebhook before polling');

      const u1 = pollDm('polled one');
      expect((await delivered(pollTg, 'answer to: polled one')).args.chat_id).toBe(3003);
      expect((await admissionOf(pollEvent(u1))).sessionKey).toBe('agent:default/poller:telegram:dm:3003');

      // The holder admits u2, then loses the confirming getUpdates (Telegram unreachable): u2 stays unconfirmed.
      pollTg.failNext('getUpdates', 1_000, 502);
      const u2 = pollDm('polled two');
      await admissionOf(pollEvent(u2));
      await eventually(() => pollTg.calls.some((c) => c.method === 'getUpdates' && c.status === 502), 'the confirmation failed');
      const holder = a.leading().length ? a : b;
      const other = holder === a ? b : a;
      await holder.stop();
      pollTg.failNext('getUpdates', 0, 502);
      const u3 = pollDm('polled three'); // arrives while the bot changes hands

      await eventually(() => other.leading().length === 1, 'the other replica takes over');
      await delivered(pollTg, 'answer to: polled three');
      const u4 = pollDm('polled four');
      await delivered(pollTg, 'answer to: polled four');

      // u2 was served twice (before and after the failover) and admitted once.
      expect(pollTg.served.filter((id) => id === u2.update_id)).toHaveLength(2);
      for (const u of [u1, u2, u3, u4]) {
        const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbound_events WHERE event_id = $1`, [pollEvent(u)]);
        expect(rows[0]!.n).toBe(1);
      }
      for (const text of ['polled one', 'polled two', 'polled three', 'polled four']) {
        expect(askedFor(text), text).toBe(1);
        // A session's turns run in order, their deliveries do not: an earlier reply may still be on its way.
        await delivered(pollTg, `answer to: ${text}`);
        expect(sentWith(pollTg, `answer to: ${text}`), text).toHaveLength(1);
      }
      await eventually(() => pollTg.pending() === 0, 'every update confirmed');
    } finally {
      await a.stop();
      await b.stop();
      await ctxA.close();
      await ctxB.close();
    }
  });

  it('an update of a shape the gateway refuses is dropped and confirmed, not fetched again for ever: the updates after it are answered', async () => {
    const ctx = createContext(deps);
    const sup = startConnectors(ctx, [telegramPolling], { refreshMs: 200, leader: { pingMs: 200, pingTimeoutMs: 1_000, initialBackoffMs: 100, maxBackoffMs: 300 } });
    try {
      await eventually(() => sup.leading().length === 1, 'the replica polls');
      // Telegram serves an unconfirmed update again on every getUpdates: a poller that failed on it would never get past it.
      const bad = pollTg.push({ message: { message_id: 'not a number', chat: { id: 3004, type: 'private' }, date: 1, text: 'poison' } });
      const good = pollTg.push(telegramMessage({ chat: { id: 3004, type: 'private' }, from: { id: 3004 }, text: 'after the poison' }));
      await delivered(pollTg, 'answer to: after the poison');
      await eventually(() => pollTg.pending() === 0, 'both confirmed');
      expect(pollTg.served.filter((id) => id === bad.update_id)).toHaveLength(1);
      const { rows } = await rt.db.pool.query<{ event_id: string }>(`SELECT event_id FROM inbound_events WHERE event_id = ANY($1)`, [[`222222:${bad.update_id}`, `222222:${good.update_id}`]]);
      expect(rows.map((r) => r.event_id)).toEqual([`222222:${good.update_id}`]);
    } finally {
      await sup.stop();
      await ctx.close();
    }
  });
});
