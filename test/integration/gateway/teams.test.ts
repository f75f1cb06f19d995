// Microsoft Teams end to end: Bot Framework activities with tokens signed by the fake Bot
// Framework (OpenID metadata + JWKS over HTTP), posted to the real gateway, admitted in Postgres,
// run by the real worker against a fake model, and delivered through the ledger to the fake
// connector with a client-credentials token from the fake token endpoint.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledAgent } from '../../../services/core/index.js';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { staticSecrets, type SecretData } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { startFakeTeams, teamsActivity, type ActivityInput, type FakeTeams, type TokenOptions } from '../../support/fake-teams.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, deliveredObligation, openTestRuntime, startTestWorker, testModelSecret, type TestRuntime } from '../../support/system.js';

const app = { appId: 'a1b2c3d4-0000-4000-8000-00000000bot1', password: 'teams-app-password-secret', tenantId: 'tenant-1' };
const teamsSecret: SecretData = { namespace: 'default', name: 'teams', data: { TEAMS_APP_ID: app.appId, TEAMS_APP_PASSWORD: app.password, TEAMS_TENANT_ID: app.tenantId } };
const SERVICE_URL = 'https://smba.trafficmanager.net/amer/';
const BOT = `28:${app.appId}`;
const ALICE = { id: '29:alice', aadObjectId: 'aad-alice', name: 'Alice' };
const BOB = { id: '29:bob', aadObjectId: 'aad-bob', name: 'Bob' };

const teamsPlatform: NonNullable<CompiledAgent['platforms']>[number] = {
  type: 'teams', credentialsSecret: 'teams', allowlist: [ALICE.aadObjectId, BOB.aadObjectId], allowAll: false, dmPairing: true, groupPolicy: 'mention',
};

let database: TestDatabase;
let model: FakeOpenAI;
let fake: FakeTeams;
let rt: TestRuntime;
let worker: RunningWorker;
let gw: RunningGateway;
let hook: string;
let clockOffsetMs = 0;

const MAX_CHARS = 1_000;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((body) => ({ text: `answer to: ${lastUser(body)}` }));
  fake = await startFakeTeams(app);
  // No typing indicator on a slow machine's turn: these tests count exact calls.
  rt = await openTestRuntime(testConfig(database.url, {
    HERMES_TEAMS_OPENID_URL: fake.openIdUrl, HERMES_TEAMS_LOGIN_URL: fake.loginUrl, HERMES_TEAMS_API_URL: fake.connectorUrl, HERMES_PROGRESS_DELAY_SECONDS: 600,
    HERMES_MAX_MESSAGE_CHARS: MAX_CHARS,
  }), 'teams');
  await createTestAgent(rt, model.baseURL, { platforms: [teamsPlatform] });
  worker = await startTestWorker(rt, { secrets: [teamsSecret] });
  gw = await startGateway({ ...rt, secrets: staticSecrets([testModelSecret, teamsSecret]), tuning: { now: () => Date.now() + clockOffsetMs } });
  hook = `${gw.url}/hooks/teams/default/demo`;
});

afterAll(async () => {
  await gw?.close();
  await worker?.close();
  await rt?.close();
  await fake?.close();
  await model?.close();
  await database?.drop();
});

const activity = (a: Omit<ActivityInput, 'serviceUrl' | 'botId'>) => teamsActivity({ ...a, serviceUrl: SERVICE_URL, botId: BOT });
const post = async (body: unknown, token?: string, url = hook) => fetch(url, {
  method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json; charset=utf-8', ...(token ? { authorization: `Bearer ${token}` } : {}) },
});
const send = async (body: unknown, opts: Partial<TokenOptions> = {}) => post(body, await fake.token({ serviceUrl: SERVICE_URL, ...opts }));

async function count(table: 'admissions' | 'inbound_events'): Promise<number> {
  const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}

async function admissionOf(conversationId: string, id: string): Promise<{ id: string; sessionId: string; sessionKey: string }> {
  return eventually(async () => {
    const { rows } = await rt.db.pool.query<{ id: string; sessionId: string; sessionKey: string }>(
      `SELECT a.id, a.session_id AS "sessionId", s.session_key AS "sessionKey" FROM inbound_events e JOIN admissions a ON a.id = e.admission_id
       JOIN sessions s ON s.id = a.session_id WHERE e.event_id = $1`, [`${conversationId}|${id}`]);
    return rows[0];
  }, `the admission of ${id}`);
}

const delivered = (text: string) => eventually(() => fake.posts().find((c) => c.body.text === text), `a Teams post "${text}"`);

describe('Teams requests the gateway refuses, touching nothing', () => {
  it('refuses a missing, expired, forged, wrong-audience, wrong-issuer, not-yet-valid or unbound token with one 401', async () => {
    const { body } = activity({ chat: 'personal', conversationId: 'a:refused', from: ALICE, text: 'hello' });
    expect((await post(body)).status).toBe(401);
    const cases: Record<string, Partial<TokenOptions>> = {
      expired: { expiresIn: -600 },
      'forged signature': { forged: true },
      'wrong audience': { audience: 'another-bot' },
      'wrong issuer': { issuer: 'https://evil.example' },
      'not yet valid': { notBefore: 900 },
      'no serviceurl claim': { noServiceUrl: true },
      'serviceurl of another connector': { serviceUrl: 'https://evil.example/' },
      'unknown kid': { unlistedKey: true },
    };
    const answers = new Set<string>();
    for (const [what, opts] of Object.entries(cases)) {
      const res = await send(body, opts);
      expect(res.status, what).toBe(401);
      answers.add(await res.text());
    }
    // A kid that is not a string (no signature needed to send one): refused like the rest, not a 503 "keys unavailable".
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    for (const kid of [123, { a: 1 }, true]) {
      const res = await post(body, `${b64({ alg: 'RS256', kid })}.${b64({})}.AA`);
      expect(res.status, `kid ${JSON.stringify(kid)}`).toBe(401);
      answers.add(await res.text());
    }
    // A valid token for an agent that does not exist: the same answer, word for word.
    const nobody = await post(body, await fake.token({ serviceUrl: SERVICE_URL }), `${gw.url}/hooks/teams/default/nobody`);
    expect(nobody.status).toBe(401);
    answers.add(await nobody.text());
    expect(answers.size).toBe(1);
    expect(await count('admissions')).toBe(0);
    expect(await count('inbound_events')).toBe(0);
    expect(model.requests).toHaveLength(0);
  });

  it('refetches the keys on an unknown kid at most once a minute, and takes a rotated key after that', async () => {
    const { body } = activity({ chat: 'personal', conversationId: 'a:rotation', from: ALICE, text: 'after rotation' });
    const before = fake.keyFetches();
    fake.publishUnlistedKey();
    // The unknown-kid refusal above refreshed the keys less than a minute ago: no refetch yet.
    for (let i = 0; i < 3; i++) expect((await send(body, { unlistedKey: true })).status).toBe(401);
    expect(fake.keyFetches()).toBe(before);
    clockOffsetMs = 61_000;
    expect((await send(body, { unlistedKey: true })).status).toBe(200);
    expect(fake.keyFetches()).toBe(before + 1);
    clockOffsetMs = 0;
    await delivered('answer to: after rotation');
  });

  it('refuses malformed JSON and unreadable activities with 400 (token valid), nothing admitted', async () => {
    const admissions = await count('admissions');
    const token = await fake.token({ serviceUrl: SERVICE_URL });
    const bad = await fetch(hook, { method: 'POST', body: '{"type":', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } });
    expect(bad.status).toBe(400);
    expect((await send({ type: 'message', id: 'x' })).status).toBe(400);
    expect(await count('admissions')).toBe(admissions);
  });
});

describe('Teams conversations', () => {
  it('a NUL in the sender\'s name is replaced and answered; in an id it is a 400, not a 500', async () => {
    const named = activity({ chat: 'personal', conversationId: 'a:nul-name', from: ALICE, text: 'nul in my name' });
    const body = named.body as { from: Record<string, unknown>; conversation: Record<string, unknown> };
    expect((await send({ ...body, from: { ...body.from, name: 'Al\u0000ice' } })).status).toBe(200);
    await delivered('answer to: nul in my name');
    const ids = activity({ chat: 'personal', conversationId: 'a:nul-id', from: ALICE, text: 'nul in an id' });
    const idBody = ids.body as typeof body;
    const res = await send({ ...idBody, conversation: { ...idBody.conversation, id: 'a:nul\u0000id' } });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('NUL');
  });

  it('drops an activity from another tenant than TEAMS_TENANT_ID, answering 200 so it is not retried', async () => {
    const a = activity({ chat: 'personal', conversationId: 'a:other-tenant', from: ALICE, text: 'from elsewhere' });
    const body = a.body as { conversation: { tenantId: string }; channelData: { tenant: { id: string } } };
    const foreign = { ...body, conversation: { ...body.conversation, tenantId: 'evil-tenant' }, channelData: { tenant: { id: 'evil-tenant' } } };
    expect((await send(foreign)).status).toBe(200);
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id LIKE 'a:other-tenant|%'`);
    expect(rows).toHaveLength(0);
    expect(model.requests.filter((r) => lastUser(r.body) === 'from elsewhere')).toHaveLength(0);
  });

  it('takes no activity of another Bot Framework channel: a Web Chat client naming an allowlisted person is not them', async () => {
    const a = activity({ chat: 'personal', conversationId: 'webchat-conv-1', from: ALICE, text: 'I am alice, honest' });
    const body = a.body as Record<string, unknown> & { conversation: Record<string, unknown> };
    // Web Chat: its own channel id, no tenant, and a `from` its client chose.
    const webchat = { ...body, channelId: 'webchat', conversation: { id: 'webchat-conv-1' }, channelData: {} };
    expect((await send(webchat)).status).toBe(200);
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id LIKE 'webchat-conv-1|%'`);
    expect(rows).toHaveLength(0);
    expect(model.requests.filter((r) => lastUser(r.body) === 'I am alice, honest')).toHaveLength(0);
  });

  it('answers a personal chat through the connector with the app token, once however often the activity is retried', async () => {
    const a = activity({ chat: 'personal', conversationId: 'a:dm-alice', from: ALICE, text: 'what is in my DM?' });
    expect((await send(a.body)).status).toBe(200);
    const reply = await delivered('answer to: what is in my DM?');
    expect(reply.conversationId).toBe('a:dm-alice');
    expect(reply.token).toMatch(/^fake-teams-token-/);
    // The Bot Framework retries the same activity: one admission, one turn, one reply.
    expect((await send(a.body)).status).toBe(200);
    const adm = await admissionOf('a:dm-alice', a.id);
    expect(adm.sessionKey).toBe('agent:default/demo:teams:dm:a%3Adm-alice');
    await deliveredObligation(rt.db.pool, adm.id, 'delivered');
    expect(model.requests.filter((r) => lastUser(r.body) === 'what is in my DM?')).toHaveLength(1);
    expect(fake.posts().filter((c) => c.body.text === 'answer to: what is in my DM?')).toHaveLength(1);
  });

  // A text past HERMES_MAX_MESSAGE_CHARS was a 400: the Bot Framework sent it again and the user heard nothing.
  it('acknowledges a message past HERMES_MAX_MESSAGE_CHARS and answers it once with the limit, never calling the model', async () => {
    const calls = model.requests.length;
    const a = activity({ chat: 'personal', conversationId: 'a:dm-toolong', from: ALICE, text: 'x'.repeat(MAX_CHARS + 1) });
    expect((await send(a.body)).status).toBe(200);
    const text = `Your message has ${MAX_CHARS + 1} characters; this agent takes at most ${MAX_CHARS}. Please shorten it or send it in parts.`;
    expect((await delivered(text)).conversationId).toBe('a:dm-toolong');
    expect((await send(a.body)).status).toBe(200); // the retry: acknowledged, not answered again
    await eventually(async () => (await rt.db.pool.query(`SELECT 1 FROM delivery_obligations o JOIN admissions a ON a.id = o.admission_id JOIN inbound_events e ON e.admission_id = a.id WHERE e.event_id LIKE '%' || $1 AND o.state = 'delivered'`, [a.id])).rowCount === 1 || undefined, 'the answer delivered');
    expect(fake.posts().filter((c) => c.body.text === text)).toHaveLength(1);
    expect(model.requests.length).toBe(calls);
  });

  it('in a group chat answers only when mentioned, without the <at> mention, one session per participant', async () => {
    const plain = activity({ chat: 'groupChat', conversationId: '19:group@thread.v2', from: ALICE, text: 'chatter' });
    expect((await send(plain.body)).status).toBe(200);
    const alice = activity({ chat: 'groupChat', conversationId: '19:group@thread.v2', from: ALICE, text: 'group question', mentionBot: true });
    const bob = activity({ chat: 'groupChat', conversationId: '19:group@thread.v2', from: BOB, text: 'bob asks', mentionBot: true });
    expect((await send(alice.body)).status).toBe(200);
    expect((await send(bob.body)).status).toBe(200);
    expect((await delivered('answer to: group question')).conversationId).toBe('19:group@thread.v2');
    await delivered('answer to: bob asks');
    const [a, b] = [await admissionOf('19:group@thread.v2', alice.id), await admissionOf('19:group@thread.v2', bob.id)];
    expect(a.sessionKey).toBe('agent:default/demo:teams:group:19%3Agroup@thread.v2:aad-alice');
    expect(b.sessionId).not.toBe(a.sessionId);
    expect(model.requests.some((r) => lastUser(r.body).includes('<at>'))).toBe(false);
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id = $1`, [`19:group@thread.v2|${plain.id}`]);
    expect(rows).toHaveLength(0);
  });

  it('keeps a channel thread as one session and replies into it; an unmentioned reply continues only our thread', async () => {
    const channel = '19:general@thread.tacv2';
    const root = activity({ chat: 'channel', conversationId: channel, from: ALICE, text: 'first question', mentionBot: true, id: '1800000009001' });
    root.body.conversation = { ...(root.body.conversation as object), id: `${channel};messageid=${root.id}` };
    expect((await send(root.body)).status).toBe(200);
    const reply1 = await delivered('answer to: first question');
    expect(reply1.conversationId).toBe(`${channel};messageid=${root.id}`);

    const inThread = (from: typeof ALICE, text: string, mentionBot: boolean, thread = root.id) => {
      const a = activity({ chat: 'channel', conversationId: `${channel};messageid=${thread}`, from, text, mentionBot });
      return a;
    };
    const second = inThread(BOB, 'second question', true);
    expect((await send(second.body)).status).toBe(200);
    expect((await delivered('answer to: second question')).conversationId).toBe(`${channel};messageid=${root.id}`);
    const third = inThread(ALICE, 'third, without a mention', false);
    expect((await send(third.body)).status).toBe(200);
    await delivered('answer to: third, without a mention');
    const rootAdm = await admissionOf(`${channel};messageid=${root.id}`, root.id);
    expect(rootAdm.sessionKey).toBe(`agent:default/demo:teams:group:19%3Ageneral@thread.tacv2:${root.id}`);
    expect((await admissionOf(`${channel};messageid=${root.id}`, second.id)).sessionId).toBe(rootAdm.sessionId);
    expect((await admissionOf(`${channel};messageid=${root.id}`, third.id)).sessionId).toBe(rootAdm.sessionId);
    const secondCall = model.requests.find((r) => lastUser(r.body) === 'second question')!;
    expect(secondCall.body.messages.map((m) => m.content)).toContain('first question');

    const elsewhere = inThread(ALICE, 'not for the bot', false, '1700000000001');
    expect((await send(elsewhere.body)).status).toBe(200);
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id = $1`, [`${channel};messageid=1700000000001|${elsewhere.id}`]);
    expect(rows).toHaveLength(0);
  });

  it('ignores the bot\'s own messages and other activity types', async () => {
    const admissions = await count('admissions');
    expect((await send(activity({ chat: 'personal', conversationId: 'a:own', from: { id: BOT }, text: 'echo' }).body)).status).toBe(200);
    expect((await send(activity({ chat: 'personal', conversationId: 'a:own', from: ALICE, text: '', type: 'conversationUpdate' }).body)).status).toBe(200);
    expect(await count('admissions')).toBe(admissions);
  });

  it('honours a connector 429 with Retry-After without spending an attempt, then delivers once', async () => {
    fake.rateLimitNext(1, 1);
    const a = activity({ chat: 'personal', conversationId: 'a:rate', from: ALICE, text: 'rate limited please' });
    expect((await send(a.body)).status).toBe(200);
    await delivered('answer to: rate limited please');
    const adm = await admissionOf('a:rate', a.id);
    const ob = await deliveredObligation(rt.db.pool, adm.id, 'delivered');
    expect(ob.attempts).toBe(1);
    expect(fake.calls.filter((c) => c.conversationId === 'a:rate').map((c) => c.status)).toEqual([429, 200]);
  });
});
