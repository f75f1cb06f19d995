// Discord end to end: signed interactions posted to the real gateway and Gateway (WebSocket)
// messages from a fake Discord, admitted in Postgres, run by the real worker against a fake model,
// and delivered through the delivery ledger to the fake Discord's REST API and interaction
// webhooks. The Gateway connection is held by one of two connector supervisors (two gateway
// replicas) on the same database, and fails over between them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb, sha256, type CompiledAgent } from '../../../services/core/index.js';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { createContext, type GatewayContext } from '../../../services/gateway/context.js';
import { discordConnector, startConnectors, type ConnectorSupervisor } from '../../../services/gateway/connectors/index.js';
import { DISCORD_INTENTS } from '../../../services/platforms/discord/index.js';
import { staticSecrets, type SecretData } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { askInteraction, discordSignedHeaders, discordTestKeys, snowflake, startFakeDiscord, type FakeDiscord } from '../../support/fake-discord.js';
import { startTcpProxy } from '../../support/tcp-proxy.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, deliveredObligation, openTestRuntime, startTestWorker, testModelSecret, type TestRuntime } from '../../support/system.js';

const BOT_TOKEN = 'discord-test-bot-token';
const keys = discordTestKeys();
const ALICE = '100000000000000001';
const BOB = '100000000000000002';
const STRANGER = '100000000000000666';
const GUILD = '800000000000000001';

let database: TestDatabase;
let model: FakeOpenAI;
let fake: FakeDiscord;
let rt: TestRuntime;
let worker: RunningWorker;
let gw: RunningGateway;
let hook: string;
let ctxA: GatewayContext;
let supA: ConnectorSupervisor;
let releaseHeld!: () => void;
const heldUntilEnd = new Promise<void>((r) => { releaseHeld = r; });
const leaderOpts = { refreshMs: 200, leader: { pingMs: 200, pingTimeoutMs: 2_000 } };

const MAX_CHARS = 3_000;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((body) => {
    const q = lastUser(body);
    if (q.startsWith('long ')) return { text: `${'a'.repeat(1_990)} ${'b'.repeat(1_990)} ${'c'.repeat(100)}` };
    // "hold …" stalls until the test ends (or the turn is interrupted: the request is cut).
    if (q.startsWith('hold ') && body.messages.at(-1)?.role === 'user') return { hold: heldUntilEnd, text: `done: ${q}` };
    return { text: `answer to: ${q}` };
  });
  fake = await startFakeDiscord(BOT_TOKEN);
  const secret: SecretData = { namespace: 'default', name: 'discord', data: { DISCORD_BOT_TOKEN: BOT_TOKEN, DISCORD_PUBLIC_KEY: keys.publicKeyHex, DISCORD_APPLICATION_ID: fake.applicationId } };
  const platform: NonNullable<CompiledAgent['platforms']>[number] = {
    type: 'discord', credentialsSecret: 'discord', allowlist: [ALICE, BOB], allowAll: false, dmPairing: false, groupPolicy: 'mention',
  };
  // The HTTP gateway takes no connections of its own: the supervisors below are the replicas that do.
  // No progress indicator ("working…", typing) on a slow machine's turn: these tests count exact calls.
  rt = await openTestRuntime(testConfig(database.url, { HERMES_DISCORD_API_URL: fake.apiUrl, HERMES_PROGRESS_DELAY_SECONDS: 600, HERMES_CONNECTORS: 'off', HERMES_MAX_MESSAGE_CHARS: MAX_CHARS }), 'discord');
  await createTestAgent(rt, model.baseURL, { platforms: [platform] });
  // Hermes' defaults: busy policy interrupt and DM pairing. Its Secret is not the connectors' (below): no second Gateway connection.
  const relaySecret: SecretData = { ...secret, name: 'discord-relay', data: { ...secret.data, DISCORD_BOT_TOKEN: 'discord-relay-bot-token' } };
  await createTestAgent(rt, model.baseURL, {
    agent: { namespace: 'default', name: 'relay' }, busyPolicy: 'interrupt', platforms: [{ ...platform, credentialsSecret: 'discord-relay', allowlist: [ALICE], dmPairing: true }],
  });
  worker = await startTestWorker(rt, { secrets: [secret, relaySecret] });
  const secrets = staticSecrets([testModelSecret, secret]);
  gw = await startGateway({ ...rt, secrets: staticSecrets([testModelSecret, secret, relaySecret]) });
  hook = `${gw.url}/hooks/discord/default/demo`;
  ctxA = createContext({ ...rt, secrets });
  supA = startConnectors(ctxA, [discordConnector], leaderOpts);
});

afterAll(async () => {
  releaseHeld?.();
  await supA?.stop();
  await ctxA?.close();
  await gw?.close();
  await worker?.close();
  await rt?.close();
  await fake?.close();
  await model?.close();
  await database?.drop();
});

const post = (body: string, headers: Record<string, string>, url = hook) => fetch(url, { method: 'POST', headers, body });
const signedPost = (payload: unknown, url = hook) => {
  const body = JSON.stringify(payload);
  return post(body, discordSignedHeaders(keys.privateKey, body), url);
};

async function count(table: 'admissions' | 'inbound_events'): Promise<number> {
  const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}

async function admissionOf(eventId: string): Promise<{ id: string; sessionKey: string }> {
  return eventually(async () => {
    const { rows } = await rt.db.pool.query<{ id: string; sessionKey: string }>(
      `SELECT a.id, s.session_key AS "sessionKey" FROM inbound_events e JOIN admissions a ON a.id = e.admission_id JOIN sessions s ON s.id = a.session_id WHERE e.event_id = $1`, [eventId]);
    return rows[0];
  }, `the admission of ${eventId}`);
}

const identifyCount = () => fake.gatewayLog.filter((l) => l.op === 'identify').length;
const messagesWith = (text: string) => fake.messages().filter((c) => c.body.content === text);
const delivered = (text: string) => eventually(() => messagesWith(text)[0], `a Discord message "${text}"`);
const modelCalls = (q: string) => model.requests.filter((r) => lastUser(r.body) === q).length;

describe('Discord interactions the gateway refuses, touching nothing', () => {
  it('refuses unsigned, badly signed, tampered, stale and future-dated requests with one 401', async () => {
    const raw = JSON.stringify(askInteraction({ prompt: 'hello', userId: ALICE, channelId: '300000000000000001', applicationId: fake.applicationId }));
    const now = Math.floor(Date.now() / 1000);
    const other = discordTestKeys();
    const cases: Record<string, Record<string, string>> = {
      unsigned: { 'content-type': 'application/json' },
      'no signature': { 'content-type': 'application/json', 'x-signature-timestamp': String(now) },
      'another key': discordSignedHeaders(other.privateKey, raw, now),
      'signature over another body': discordSignedHeaders(keys.privateKey, raw.replace('hello', 'hellO'), now),
      'six minutes old': discordSignedHeaders(keys.privateKey, raw, now - 360),
      'six minutes ahead': discordSignedHeaders(keys.privateKey, raw, now + 360),
    };
    for (const [what, headers] of Object.entries(cases)) {
      const res = await post(raw, headers);
      expect(res.status, what).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code, what).toBe('HERMES_SIGNATURE_INVALID');
    }
    // A timestamp re-signed to look fresh is a different signature: the old one over the new stamp fails.
    const old = discordSignedHeaders(keys.privateKey, raw, now - 360);
    expect((await post(raw, { ...old, 'x-signature-timestamp': String(now) })).status).toBe(401);
    // Properly signed, for an agent that does not exist: the same 401, word for word.
    const nobody = await signedPost(JSON.parse(raw), `${gw.url}/hooks/discord/default/nobody`);
    const wrong = await post(raw, discordSignedHeaders(other.privateKey, raw));
    expect(nobody.status).toBe(401);
    expect(await nobody.text()).toBe(await wrong.text());
    // Signed but malformed: 400.
    const bad = '{"type": 2,';
    expect((await post(bad, discordSignedHeaders(keys.privateKey, bad))).status).toBe(400);
    expect((await signedPost({ type: 2, id: 'not-a-snowflake' })).status).toBe(400);
    expect(await count('admissions')).toBe(0);
    expect(await count('inbound_events')).toBe(0);
    expect(model.requests).toHaveLength(0);
  });

  it('answers a signed PING with PONG, and refuses an unsigned one', async () => {
    const ping = { id: snowflake(), application_id: fake.applicationId, type: 1, token: 'itok-ping', version: 1 };
    const res = await signedPost(ping);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 1 });
    expect((await post(JSON.stringify(ping), { 'content-type': 'application/json' })).status).toBe(401);
    expect(await count('admissions')).toBe(0);
  });
});

describe('Discord interactions when the secrets cannot be read', () => {
  it('answers 503 (Discord shows the user an error; nothing is admitted)', async () => {
    const broken = { source: 'kubernetes', resolve: () => Promise.reject(new Error('the apiserver is unreachable')) };
    const other = await startGateway({ ...rt, secrets: broken as unknown as ReturnType<typeof staticSecrets> });
    try {
      const res = await signedPost(askInteraction({ prompt: 'secrets down', userId: ALICE, channelId: '300000000000000050', applicationId: fake.applicationId }), `${other.url}/hooks/discord/default/demo`);
      expect(res.status).toBe(503);
      const { rows } = await rt.db.pool.query(`SELECT 1 FROM admissions WHERE content = 'secrets down'`);
      expect(rows).toHaveLength(0);
    } finally {
      await other.close();
    }
  });
});

describe('Discord /ask', () => {
  it('defers at once, then replaces "thinking…" with the reply through the interaction webhook; a duplicate is one turn', async () => {
    const interaction = askInteraction({ prompt: 'what is up?', userId: ALICE, channelId: '300000000000000010', applicationId: fake.applicationId });
    const res = await signedPost(interaction);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ type: 5 });
    const again = await signedPost(interaction);
    expect(await again.json()).toEqual({ type: 5 });
    const reply = await delivered('answer to: what is up?');
    expect(reply.method).toBe('PATCH');
    expect(reply.path).toBe(`/webhooks/${fake.applicationId}/${interaction.token as string}/messages/@original`);
    expect(reply.auth).toBeUndefined(); // the webhook's token authenticates; the bot token is not sent
    expect(reply.body.allowed_mentions).toEqual({ parse: [] });
    const adm = await admissionOf(interaction.id as string);
    expect(adm.sessionKey).toBe(`agent:default/demo:discord:group:300000000000000010:${ALICE}`);
    expect(modelCalls('what is up?')).toBe(1);
    expect(messagesWith('answer to: what is up?')).toHaveLength(1);
  });

  it('keeps a thread as one session, and a DM by its channel', async () => {
    const inThread = askInteraction({ prompt: 'thread ask', userId: BOB, channelId: '300000000000000021', channelType: 11, parentId: '300000000000000020', applicationId: fake.applicationId });
    const inDm = askInteraction({ prompt: 'dm ask', userId: ALICE, channelId: '300000000000000030', dm: true, applicationId: fake.applicationId });
    expect(await (await signedPost(inThread)).json()).toEqual({ type: 5 });
    expect(await (await signedPost(inDm)).json()).toEqual({ type: 5 });
    expect((await admissionOf(inThread.id as string)).sessionKey).toBe('agent:default/demo:discord:group:300000000000000020:300000000000000021');
    expect((await admissionOf(inDm.id as string)).sessionKey).toBe('agent:default/demo:discord:dm:300000000000000030');
    await delivered('answer to: thread ask');
    await delivered('answer to: dm ask');
  });

  it('gives a stranger one refusal in place of an ephemeral "thinking…", then only ephemeral refusals, and never calls the model', async () => {
    const calls = model.requests.length;
    const first = askInteraction({ prompt: 'let me in', userId: STRANGER, channelId: '300000000000000040', applicationId: fake.applicationId });
    // Ephemeral (flags 64): the channel sees neither "thinking…" nor the refusal that replaces it.
    expect(await (await signedPost(first)).json()).toEqual({ type: 5, data: { flags: 64 } });
    const refusal = await eventually(() => fake.messages().find((c) => c.path.includes(first.token as string)), 'the refusal');
    expect(String(refusal.body.content)).toMatch(/allowed/);
    const second = askInteraction({ prompt: 'please', userId: STRANGER, channelId: '300000000000000040', applicationId: fake.applicationId });
    const answer = (await (await signedPost(second)).json()) as { type: number; data: { flags: number; content: string } };
    expect(answer.type).toBe(4);
    expect(answer.data.flags).toBe(64);
    expect(model.requests.length).toBe(calls);
  });
});

describe('Discord /ask always gets a final answer (busy policy interrupt, DM pairing)', () => {
  const relay = () => `${gw.url}/hooks/discord/default/relay`;
  const patchesOf = (interaction: Record<string, unknown>) => fake.messages().filter((c) => c.path.includes(interaction.token as string));

  it('replaces "thinking…" of an /ask superseded by the user\'s next one with a notice; the next one gets the answer', async () => {
    const ch = '300000000000001000';
    const first = askInteraction({ prompt: 'hold the first', userId: ALICE, channelId: ch, applicationId: fake.applicationId });
    expect(await (await signedPost(first, relay())).json()).toEqual({ type: 5 });
    await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'hold the first'), 'the first turn running');
    const second = askInteraction({ prompt: 'never mind, this instead', userId: ALICE, channelId: ch, applicationId: fake.applicationId });
    expect(await (await signedPost(second, relay())).json()).toEqual({ type: 5 });
    const notice = await eventually(() => patchesOf(first)[0], 'the first interaction answered');
    expect(notice).toMatchObject({ method: 'PATCH', path: `/webhooks/${fake.applicationId}/${first.token as string}/messages/@original` });
    expect(String(notice.body.content)).toMatch(/interrupted by your next message/i);
    const answer = await eventually(() => patchesOf(second)[0], 'the second interaction answered');
    expect(answer.body.content).toBe('answer to: never mind, this instead');
    expect(patchesOf(first)).toHaveLength(1);
    // The transcript keeps what the user was told, marked interrupted, with the admission's outcome.
    const adm = await admissionOf(first.id as string);
    const { rows } = await rt.db.pool.query<{ outcome: string }>(`SELECT outcome FROM admissions WHERE id = $1`, [adm.id]);
    expect(rows[0]!.outcome).toBe('interrupted');
  });

  it('answers a DM /ask that pairing leaves without a reply (a third try within 10 minutes) at once, ephemerally', async () => {
    const ch = '300000000000001100';
    const ask = (prompt: string) => askInteraction({ prompt, userId: STRANGER, channelId: ch, dm: true, applicationId: fake.applicationId });
    const calls = model.requests.length;
    const first = ask('hi');
    expect(await (await signedPost(first, relay())).json()).toEqual({ type: 5 });
    const code = await eventually(() => patchesOf(first)[0], 'the pairing code');
    expect(String(code.body.content)).toMatch(/pairing code/);
    const second = ask('hi again');
    expect(await (await signedPost(second, relay())).json()).toEqual({ type: 5 });
    const reminder = await eventually(() => patchesOf(second)[0], 'the reminder');
    expect(String(reminder.body.content)).toMatch(/still waiting for the owner's approval/);
    const third = ask('hello??');
    const answer = (await (await signedPost(third, relay())).json()) as { type: number; data: { flags: number; content: string } };
    expect(answer).toEqual({ type: 4, data: { content: expect.stringMatching(/still waiting for the owner's approval/) as unknown as string, flags: 64 } });
    expect(model.requests.length).toBe(calls);
  });
});

describe('Discord Gateway messages', () => {
  it('identifies with the bot token and the message intents, answers a DM as a reply, and ignores bots and itself', async () => {
    await eventually(() => fake.live().length === 1 || undefined, 'a Gateway connection');
    expect(fake.gatewayLog[0]).toMatchObject({ op: 'identify', token: BOT_TOKEN, intents: DISCORD_INTENTS });
    expect(DISCORD_INTENTS).toBe((1 << 9) | (1 << 12) | (1 << 15));
    fake.dispatchMessage({ content: 'from a bot', authorId: '555000000000000001', channelId: '300000000000000100', bot: true });
    fake.dispatchMessage({ content: 'my own echo', authorId: fake.botUserId, channelId: '300000000000000100' });
    const dm = fake.dispatchMessage({ content: 'hello over the gateway', authorId: ALICE, channelId: '300000000000000100' });
    const reply = await delivered('answer to: hello over the gateway');
    expect(reply).toMatchObject({ method: 'POST', path: '/channels/300000000000000100/messages', auth: `Bot ${BOT_TOKEN}` });
    expect(reply.body.message_reference).toMatchObject({ message_id: dm.id });
    expect((await admissionOf(dm.id as string)).sessionKey).toBe('agent:default/demo:discord:dm:300000000000000100');
    // Discord sends the same message again (a replay): one admission.
    fake.dispatchMessage({ id: dm.id as string, content: 'hello over the gateway', authorId: ALICE, channelId: '300000000000000100' });
    const later = fake.dispatchMessage({ content: 'second dm', authorId: ALICE, channelId: '300000000000000100' });
    await delivered('answer to: second dm');
    await admissionOf(later.id as string);
    expect(modelCalls('hello over the gateway')).toBe(1);
    expect(modelCalls('from a bot') + modelCalls('my own echo')).toBe(0);
  });

  // A message past HERMES_MAX_MESSAGE_CHARS was dropped with a warning in the log: the user heard nothing.
  it('answers a message past HERMES_MAX_MESSAGE_CHARS once with the limit, never calling the model', async () => {
    await eventually(() => fake.live().length === 1 || undefined, 'a Gateway connection');
    const long = 'x'.repeat(MAX_CHARS + 1);
    const dm = fake.dispatchMessage({ content: long, authorId: ALICE, channelId: '300000000000000140' });
    const reply = await delivered(`Your message has ${MAX_CHARS + 1} characters; this agent takes at most ${MAX_CHARS}. Please shorten it or send it in parts.`);
    expect(reply).toMatchObject({ method: 'POST', path: '/channels/300000000000000140/messages' });
    expect(reply.body.message_reference).toMatchObject({ message_id: dm.id });
    // A replay of the same message: answered no second time.
    fake.dispatchMessage({ id: dm.id as string, content: long, authorId: ALICE, channelId: '300000000000000140' });
    const next = fake.dispatchMessage({ content: 'after the long one', authorId: ALICE, channelId: '300000000000000140' });
    await delivered('answer to: after the long one');
    await admissionOf(next.id as string);
    expect(fake.messages().filter((c) => c.path === '/channels/300000000000000140/messages')).toHaveLength(2);
    expect(modelCalls(long)).toBe(0);
  });

  it('/stop answers "Stopping the running turn." before the stopped turn\'s own notice', async () => {
    const ch = '300000000000000150';
    await eventually(() => fake.live().length === 1 || undefined, 'a Gateway connection');
    fake.dispatchMessage({ content: 'hold this one', authorId: ALICE, channelId: ch });
    await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'hold this one'), 'the turn running');
    fake.dispatchMessage({ content: '/stop', authorId: ALICE, channelId: ch });
    const notice = await eventually(() => fake.messages().find((m) => m.path === `/channels/${ch}/messages` && String(m.body.content).startsWith('The turn was interrupted')), 'the stopped turn\'s notice');
    const sent = fake.messages().filter((m) => m.path === `/channels/${ch}/messages`).map((m) => m.body.content);
    expect(sent).toEqual(['Stopping the running turn.', notice.body.content]);
  });

  it('answers in guild channels only when mentioned or replied to (groupPolicy mention), per participant', async () => {
    const ch = '300000000000000200';
    const chatter = fake.dispatchMessage({ content: 'just chatting', authorId: ALICE, channelId: ch, guildId: GUILD });
    const mention = fake.dispatchMessage({ content: `<@${fake.botUserId}> mentioned question`, authorId: ALICE, channelId: ch, guildId: GUILD, mentions: [fake.botUserId] });
    await delivered('answer to: mentioned question');
    const replyToBot = fake.dispatchMessage({ content: 'a reply to the bot', authorId: BOB, channelId: ch, guildId: GUILD, replyToAuthor: fake.botUserId });
    await delivered('answer to: a reply to the bot');
    expect((await admissionOf(mention.id as string)).sessionKey).toBe(`agent:default/demo:discord:group:${ch}:${ALICE}`);
    expect((await admissionOf(replyToBot.id as string)).sessionKey).toBe(`agent:default/demo:discord:group:${ch}:${BOB}`);
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id = $1`, [chatter.id]);
    expect(rows).toHaveLength(0);
  });

  it('keeps a thread as one session: a mention opens it, later plain messages in it continue it', async () => {
    const thread = '300000000000000301';
    fake.channels.set(thread, { type: 11, parent_id: '300000000000000300' });
    const open = fake.dispatchMessage({ content: `<@${fake.botUserId}> thread opener`, authorId: ALICE, channelId: thread, guildId: GUILD, mentions: [fake.botUserId] });
    await delivered('answer to: thread opener');
    const follow = fake.dispatchMessage({ content: 'thread follow-up', authorId: BOB, channelId: thread, guildId: GUILD });
    const reply = await delivered('answer to: thread follow-up');
    expect(reply.path).toBe(`/channels/${thread}/messages`);
    const key = 'agent:default/demo:discord:group:300000000000000300:300000000000000301';
    expect((await admissionOf(open.id as string)).sessionKey).toBe(key);
    expect((await admissionOf(follow.id as string)).sessionKey).toBe(key);
    // In a thread the bot never took part in, a plain message is nobody's turn.
    const otherThread = '300000000000000311';
    fake.channels.set(otherThread, { type: 11, parent_id: '300000000000000300' });
    const stray = fake.dispatchMessage({ content: 'not for the bot', authorId: ALICE, channelId: otherThread, guildId: GUILD });
    const marker = fake.dispatchMessage({ content: 'marker dm', authorId: ALICE, channelId: '300000000000000101' });
    await admissionOf(marker.id as string); // dispatches are handled in order: the stray one is settled
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id = $1`, [stray.id]);
    expect(rows).toHaveLength(0);
  });

  it('splits a long reply at 2 000 characters, in order, the first piece as the reply', async () => {
    const ch = '300000000000000400';
    const m = fake.dispatchMessage({ content: 'long story', authorId: ALICE, channelId: ch });
    const pieces = await eventually(() => {
      const p = fake.messages().filter((c) => c.path === `/channels/${ch}/messages`);
      return p.length === 3 ? p : undefined;
    }, 'three pieces');
    expect(pieces.every((p) => String(p.body.content).length <= 2_000)).toBe(true);
    expect(pieces.map((p) => String(p.body.content)[0])).toEqual(['a', 'b', 'c']);
    expect(pieces[0]!.body.message_reference).toMatchObject({ message_id: m.id });
    expect(pieces[1]!.body.message_reference).toBeUndefined();
  });

  it('honours a 429 with retry_after without spending an attempt, then delivers once', async () => {
    const ch = '300000000000000500';
    fake.rateLimitNext(1, 1);
    const m = fake.dispatchMessage({ content: 'rate limited please', authorId: ALICE, channelId: ch });
    await delivered('answer to: rate limited please');
    const adm = await admissionOf(m.id as string);
    const ob = await deliveredObligation(rt.db.pool, adm.id, 'the obligation delivered');
    expect(ob.attempts).toBe(1);
    expect(fake.calls.filter((c) => c.path === `/channels/${ch}/messages`).map((c) => c.status)).toEqual([429, 200]);
  });

  it('resumes after a dropped connection and gets what it missed', async () => {
    const before = fake.gatewayLog.length;
    fake.dropConnections();
    await eventually(() => fake.gatewayLog.slice(before).find((l) => l.op === 'resume'), 'a RESUME');
    await eventually(() => fake.live().length === 1 || undefined, 'the resumed connection');
    const m = fake.dispatchMessage({ content: 'after the resume', authorId: ALICE, channelId: '300000000000000600' });
    await delivered('answer to: after the resume');
    await admissionOf(m.id as string);
  });
});

describe('Discord Gateway failover between two gateway replicas', () => {
  it('hands the connection to the other replica when the holder stops, and admits nothing twice', async () => {
    const ctxB = createContext({ ...rt, secrets: staticSecrets([testModelSecret, { namespace: 'default', name: 'discord', data: { DISCORD_BOT_TOKEN: BOT_TOKEN, DISCORD_PUBLIC_KEY: keys.publicKeyHex } }]) });
    const supB = startConnectors(ctxB, [discordConnector], leaderOpts);
    try {
      await eventually(() => supB.campaigns().length === 1 || undefined, 'replica B campaigns');
      await new Promise((r) => setTimeout(r, 600));
      expect(supA.leading()).toHaveLength(1);
      expect(supB.leading()).toHaveLength(0);
      expect(fake.live()).toHaveLength(1);
      const m1 = fake.dispatchMessage({ content: 'before failover', authorId: ALICE, channelId: '300000000000000700' });
      await admissionOf(m1.id as string);
      const identifies = identifyCount();

      await supA.stop(); // the holder goes away
      await eventually(() => supB.leading().length === 1 || undefined, 'replica B leads');
      // Connected means identified anew (the old holder's socket may still be closing on the fake's side).
      await eventually(() => (fake.live().length === 1 && identifyCount() > identifies) || undefined, 'B connected');
      expect(identifyCount()).toBe(identifies + 1);
      // Discord delivers the same message again to the new connection, and a new one.
      fake.dispatchMessage({ id: m1.id as string, content: 'before failover', authorId: ALICE, channelId: '300000000000000700' });
      const m2 = fake.dispatchMessage({ content: 'after failover', authorId: ALICE, channelId: '300000000000000700' });
      await delivered('answer to: after failover');
      await admissionOf(m2.id as string);
      const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbound_events WHERE event_id = $1`, [m1.id]);
      expect(rows[0]!.n).toBe(1);
      expect(modelCalls('before failover')).toBe(1);
      // Its reply may still be on its way: deliveries are not ordered behind the session's turns.
      await delivered('answer to: before failover');
      expect(messagesWith('answer to: before failover')).toHaveLength(1);
    } finally {
      await supB.stop();
      await ctxB.close();
    }
  });

  it('drops the connection when its holder\'s Postgres session dies; exactly one replica holds it again, nothing admitted twice', async () => {
    const secrets = staticSecrets([testModelSecret, { namespace: 'default', name: 'discord', data: { DISCORD_BOT_TOKEN: BOT_TOKEN } }]);
    const ctxs = [createContext({ ...rt, secrets }), createContext({ ...rt, secrets })];
    const sups = ctxs.map((c) => startConnectors(c, [discordConnector], leaderOpts));
    const leaders = () => sups.filter((x) => x.leading().length === 1).length;
    try {
      await eventually(() => (leaders() === 1 && fake.live().length === 1) || undefined, 'one replica connected');
      const m1 = fake.dispatchMessage({ content: 'before the kill', authorId: ALICE, channelId: '300000000000000800' });
      await admissionOf(m1.id as string);
      const identifies = identifyCount();
      // The holder's lock session dies (a crashed replica, a cut network path): Postgres frees the lock.
      const lock = `hermes-connection:discord-gateway:${sha256(BOT_TOKEN).slice(0, 16)}`;
      const killed = await rt.db.pool.query(
        `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`, [lock]);
      expect(killed.rowCount).toBe(1);
      await eventually(() => (identifyCount() === identifies + 1 && fake.live().length === 1 && leaders() === 1) || undefined, 'a new holder connected');
      await new Promise((r) => setTimeout(r, 500));
      expect(fake.live()).toHaveLength(1);
      expect(leaders()).toBe(1);
      fake.dispatchMessage({ id: m1.id as string, content: 'before the kill', authorId: ALICE, channelId: '300000000000000800' });
      const m2 = fake.dispatchMessage({ content: 'after the kill', authorId: ALICE, channelId: '300000000000000800' });
      await delivered('answer to: after the kill');
      await admissionOf(m2.id as string);
      expect(modelCalls('before the kill')).toBe(1);
      // Its reply may still be on its way: deliveries are not ordered behind the session's turns.
      await delivered('answer to: before the kill');
      expect(messagesWith('answer to: before the kill')).toHaveLength(1);
    } finally {
      for (const x of sups) await x.stop();
      for (const c of ctxs) await c.close();
    }
  });

  it('resumes before a message whose admission met a Postgres outage, so Discord sends it again and it is admitted once', async () => {
    const proxy = await startTcpProxy({ port: Number(new URL(database.url).port) });
    const viaProxy = openDb(proxy.via(database.url), { queryTimeoutMs: 500 });
    const secrets = staticSecrets([testModelSecret, { namespace: 'default', name: 'discord', data: { DISCORD_BOT_TOKEN: BOT_TOKEN } }]);
    // This replica's ledger writes go through the proxy; its leader lock does not.
    const ctx = createContext({ ...rt, db: viaProxy, secrets });
    const sup = startConnectors(ctx, [discordConnector], leaderOpts);
    try {
      await eventually(() => (sup.leading().length === 1 && fake.live().length === 1) || undefined, 'connected');
      const resumes = fake.gatewayLog.filter((l) => l.op === 'resume').length;
      proxy.mode = 'reset';
      proxy.strand();
      const m = fake.dispatchMessage({ content: 'during the outage', authorId: ALICE, channelId: '300000000000000900' });
      await eventually(() => fake.gatewayLog.filter((l) => l.op === 'resume').length > resumes || undefined, 'a RESUME after the failed admission');
      const { rows } = await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id = $1`, [m.id]);
      expect(rows).toHaveLength(0);
      proxy.mode = 'forward';
      await delivered('answer to: during the outage');
      const { rows: once } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbound_events WHERE event_id = $1`, [m.id]);
      expect(once[0]!.n).toBe(1);
      expect(modelCalls('during the outage')).toBe(1);
    } finally {
      await sup.stop();
      await ctx.close();
      await viaProxy.close();
      await proxy.close();
    }
  }, 30_000);
});
