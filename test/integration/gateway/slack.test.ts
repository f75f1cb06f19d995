// Slack over the Events API, end to end: signed events posted to the real gateway, admitted in
// Postgres, run by the real worker against a fake model, and delivered through the delivery ledger
// to a fake Slack Web API (the real @slack/web-api client talks to it over HTTP).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admitAnswered, approvalDecidedBy, claimDelivery, duplicateMarker, markStopped, parkApproval, registerInstance, type CompiledAgent,
} from '../../../services/core/index.js';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { staticSecrets, type SecretData } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { slackEvent, slackSignedHeaders, startFakeSlack, type FakeSlack, type SlackMessageInput } from '../../support/fake-slack.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, deliveredObligation, openTestRuntime, startTestWorker, testModelSecret, type TestRuntime } from '../../support/system.js';

const BOT_TOKEN = 'xoxb-test-bot-token';
const SIGNING_SECRET = 'slack-signing-secret-0123456789abcdef';
const slackSecret: SecretData = { namespace: 'default', name: 'slack', data: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: SIGNING_SECRET } };
const ALLOWED = 'UALICE';
const ALSO_ALLOWED = 'UBOB';
const STRANGER = 'UMALLORY';
const MAX_BODY = 64 * 1024;
const MAX_CHARS = 50_000;

// Pairing off: a stranger gets the plain refusal (DM pairing: test/integration/platforms/pairing-slack.test.ts).
const slackPlatform: NonNullable<CompiledAgent['platforms']>[number] = {
  type: 'slack', credentialsSecret: 'slack', allowlist: [ALLOWED, ALSO_ALLOWED], allowAll: false, dmPairing: false, groupPolicy: 'mention',
};

let database: TestDatabase;
let model: FakeOpenAI;
let fakeSlack: FakeSlack;
let rt: TestRuntime;
let worker: RunningWorker;
let gw: RunningGateway;
let hook: string;
let agentId: string;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((body) => {
    const q = lastUser(body);
    if (q === 'say nothing') return { text: 'NO_REPLY' };
    if (q.startsWith('long ')) return { text: `${'a'.repeat(3_990)} ${'b'.repeat(3_990)} ${'c'.repeat(100)}` };
    return { text: `answer to: ${q}` };
  });
  fakeSlack = await startFakeSlack(BOT_TOKEN);
  // No progress indicator ("working…", typing) on a slow machine's turn: these tests count exact calls.
  rt = await openTestRuntime(testConfig(database.url, { HERMES_SLACK_API_URL: fakeSlack.apiUrl, HERMES_PROGRESS_DELAY_SECONDS: 600, HERMES_MAX_BODY_BYTES: MAX_BODY, HERMES_MAX_MESSAGE_CHARS: MAX_CHARS }), 'slack');
  agentId = await createTestAgent(rt, model.baseURL, { platforms: [slackPlatform] });
  await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'team' }, platforms: [{ ...slackPlatform, allowlist: [], allowAll: true, groupPolicy: 'all' }] });
  // Team mode: only Bob may answer /approve and /deny.
  await createTestAgent(rt, model.baseURL, {
    agent: { namespace: 'default', name: 'approvers' }, platforms: [{ ...slackPlatform, groupPolicy: 'all' }],
    access: { default: { approve: false }, groups: [], users: [{ match: `slack:${ALSO_ALLOWED}`, approve: true }] },
  });
  worker = await startTestWorker(rt, { secrets: [slackSecret] });
  gw = await startGateway({ ...rt, secrets: staticSecrets([testModelSecret, slackSecret]) });
  hook = `${gw.url}/hooks/slack/default/demo`;
});

afterAll(async () => {
  await gw?.close();
  await worker?.close();
  await rt?.close();
  await fakeSlack?.close();
  await model?.close();
  await database?.drop();
});

const post = (body: string, headers: Record<string, string>, url = hook) => fetch(url, { method: 'POST', headers, body });
const signedPost = (payload: unknown, extra: Record<string, string> = {}, url = hook) => {
  const body = JSON.stringify(payload);
  return post(body, { ...slackSignedHeaders(SIGNING_SECRET, body), ...extra }, url);
};
const send = (m: SlackMessageInput, extra: Record<string, string> = {}) => {
  const ev = slackEvent(m);
  return { ...ev, res: signedPost(ev.body, extra) };
};

async function count(table: 'admissions' | 'inbound_events' | 'delivery_obligations'): Promise<number> {
  const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}

async function admissionOf(eventId: string): Promise<{ id: string; sessionId: string }> {
  return eventually(async () => {
    const { rows } = await rt.db.pool.query<{ id: string; sessionId: string }>(
      `SELECT a.id, a.session_id AS "sessionId" FROM inbound_events e JOIN admissions a ON a.id = e.admission_id WHERE e.event_id = $1`, [eventId]);
    return rows[0];
  }, `the admission of ${eventId}`);
}

async function sessionKey(sessionId: string): Promise<string> {
  const { rows } = await rt.db.pool.query<{ session_key: string }>(`SELECT session_key FROM sessions WHERE id = $1`, [sessionId]);
  return rows[0]!.session_key;
}

const postsWith = (text: string) => fakeSlack.posts().filter((c) => c.args.text === text);
const delivered = (text: string) => eventually(() => postsWith(text)[0], `a Slack post "${text}"`);

describe('Slack requests the gateway refuses, touching nothing', () => {
  it('answers url_verification with the challenge and admits nothing', async () => {
    const res = await signedPost({ type: 'url_verification', token: 'x', challenge: 'challenge-abc' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ challenge: 'challenge-abc' });
    expect(await count('admissions')).toBe(0);
  });

  it('refuses unsigned, badly signed, stale and future-dated requests with 401', async () => {
    const { body } = slackEvent({ user: ALLOWED, text: 'hello', channel: 'DREFUSED', channelType: 'im' });
    const raw = JSON.stringify(body);
    const now = Math.floor(Date.now() / 1000);
    const cases: Record<string, Record<string, string>> = {
      unsigned: { 'content-type': 'application/json' },
      'no signature': { 'content-type': 'application/json', 'x-slack-request-timestamp': String(now) },
      'wrong secret': slackSignedHeaders('not-the-secret', raw, now),
      'signature over another body': slackSignedHeaders(SIGNING_SECRET, `${raw} `, now),
      'ten minutes old': slackSignedHeaders(SIGNING_SECRET, raw, now - 600),
      'ten minutes ahead': slackSignedHeaders(SIGNING_SECRET, raw, now + 600),
    };
    for (const [what, headers] of Object.entries(cases)) {
      const res = await post(raw, headers);
      expect(res.status, what).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code, what).toBe('HERMES_SIGNATURE_INVALID');
    }
    // A valid signature for an agent that does not exist: the same 401, word for word, as a bad signature.
    const nobody = await signedPost(body, {}, `${gw.url}/hooks/slack/default/nobody`);
    const wrong = await post(raw, slackSignedHeaders('not-the-secret', raw));
    expect(nobody.status).toBe(401);
    expect(await nobody.text()).toBe(await wrong.text());
    expect(await count('admissions')).toBe(0);
    expect(await count('inbound_events')).toBe(0);
    expect(model.requests).toHaveLength(0);
  });

  it('refuses malformed JSON (400), unknown envelopes (400), oversized bodies (413) and other media types (415)', async () => {
    const bad = '{"type": "event_callback", ';
    const res = await post(bad, slackSignedHeaders(SIGNING_SECRET, bad));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('HERMES_BAD_JSON');
    expect((await signedPost({ type: 'event_callback', event: { type: 'message' } })).status).toBe(400); // no event_id
    const huge = JSON.stringify({ type: 'event_callback', padding: 'x'.repeat(MAX_BODY) });
    expect((await post(huge, slackSignedHeaders(SIGNING_SECRET, huge))).status).toBe(413);
    expect((await post('a=b', { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(415);
    expect(await count('admissions')).toBe(0);
  });

  it('acknowledges bot messages, its own echoes, edits and joins without admitting them', async () => {
    const ignored: SlackMessageInput[] = [
      { user: 'UOTHERBOT', text: 'beep', channel: 'DIGNORE', channelType: 'im', botId: 'B1' },
      { user: 'UBOT', text: 'our own reply', channel: 'DIGNORE', channelType: 'im' },
      { user: ALLOWED, text: 'edited', channel: 'DIGNORE', channelType: 'im', subtype: 'message_changed' },
      { user: ALLOWED, text: '<@UALICE> has joined the channel', channel: 'CIGNORE', channelType: 'channel', subtype: 'channel_join' },
      { user: ALLOWED, text: 'chatter without a mention', channel: 'CIGNORE', channelType: 'channel' },
    ];
    for (const m of ignored) expect((await send(m).res).status).toBe(200);
    expect(await count('admissions')).toBe(0);
  });
});

describe('Slack conversations', () => {
  it('answers a DM in the DM, once, however often Slack retries the event', async () => {
    const first = send({ user: ALLOWED, text: 'what is in my DM?', channel: 'DALICE', channelType: 'im' });
    expect((await first.res).status).toBe(200);
    const post1 = await delivered('answer to: what is in my DM?');
    expect(post1.args.channel).toBe('DALICE');
    expect(post1.args.thread_ts).toBeUndefined();
    expect(post1.token).toBe(BOT_TOKEN);

    // Slack retries the same event (it did not see our ack in time): one admission, one turn, one reply.
    const retry = await signedPost(first.body, { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' });
    expect(retry.status).toBe(200);
    const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM inbound_events WHERE event_id = $1`, [first.eventId]);
    expect(rows[0]!.n).toBe(1);
    const adm = await admissionOf(first.eventId);
    await deliveredObligation(rt.db.pool, adm.id);
    expect(model.requests.filter((r) => lastUser(r.body) === 'what is in my DM?')).toHaveLength(1);
    expect(postsWith('answer to: what is in my DM?')).toHaveLength(1);
  });

  it('in a shared thread a designated approver decides the command waiting for another person\'s turn (Hermes: approvals are the session\'s); without team mode only its own user does', async () => {
    async function waitingIn(agent: string, channel: string) {
      const opening = send({ user: ALLOWED, text: 'please clean up', channel, channelType: 'channel' });
      expect((await opening.res).status).toBe(200);
      const turn = await admissionOf(opening.eventId);
      await eventually(() => fakeSlack.posts().find((c) => c.args.channel === channel), 'the first answer');
      const parked = await parkApproval(rt.db.pool, { admissionId: turn.id, command: 'rm -rf /srv/cache', reason: 'deleting files', timeoutSeconds: 600 });
      const approve = send({ user: ALSO_ALLOWED, text: '!approve', channel, channelType: 'channel', threadTs: opening.ts });
      expect((await approve.res).status).toBe(200);
      const decider = await admissionOf(approve.eventId);
      expect(decider.sessionId).toBe(turn.sessionId); // one thread, one session
      return { parked, decider, url: `${gw.url}/hooks/slack/default/${agent}` };
    }
    const prev = hook;
    try {
      hook = `${gw.url}/hooks/slack/default/approvers`;
      const team = await waitingIn('approvers', 'CAPPROVE');
      expect((await approvalDecidedBy(rt.db.pool, team.decider.id))?.id).toBe(team.parked.id);
      hook = `${gw.url}/hooks/slack/default/team`;
      const open = await waitingIn('team', 'COPEN');
      expect(await approvalDecidedBy(rt.db.pool, open.decider.id)).toBeUndefined();
    } finally {
      hook = prev;
    }
  });

  it('answers a channel mention in its thread; later messages in that thread (mentioned or not) continue the session', async () => {
    const opening = send({ type: 'app_mention', user: ALLOWED, text: '<@UBOT> first question', channel: 'CTEAM' });
    // Slack also sends the same text as a plain message event (channel subscription): not a second turn.
    const copy = send({ user: ALLOWED, text: '<@UBOT> first question', channel: 'CTEAM', channelType: 'channel', ts: opening.ts });
    expect((await opening.res).status).toBe(200);
    expect((await copy.res).status).toBe(200);
    const reply1 = await delivered('answer to: first question');
    expect(reply1.args).toMatchObject({ channel: 'CTEAM', thread_ts: opening.ts });

    // Bob follows up in the thread: a thread is one session, shared by everyone in it.
    const followUp = send({ type: 'app_mention', user: ALSO_ALLOWED, text: '<@UBOT> second question', channel: 'CTEAM', threadTs: opening.ts });
    const followUpCopy = send({ user: ALSO_ALLOWED, text: '<@UBOT> second question', channel: 'CTEAM', channelType: 'channel', threadTs: opening.ts, ts: followUp.ts });
    expect((await followUp.res).status).toBe(200);
    expect((await followUpCopy.res).status).toBe(200);
    const reply2 = await delivered('answer to: second question');
    expect(reply2.args).toMatchObject({ channel: 'CTEAM', thread_ts: opening.ts });
    expect((await admissionOf(followUp.eventId)).sessionId).toBe((await admissionOf(opening.eventId)).sessionId);
    // The model saw the thread's first exchange in the second turn.
    const second = model.requests.find((r) => lastUser(r.body) === 'second question')!;
    expect(second.body.messages.map((m) => m.content)).toContain('first question');
    expect(model.requests.filter((r) => lastUser(r.body) === 'first question')).toHaveLength(1);
    expect(model.requests.filter((r) => lastUser(r.body) === 'second question')).toHaveLength(1);

    // In a thread the bot took part in, a reply needs no mention (Hermes follows its threads)…
    const plain = send({ user: ALLOWED, text: 'third, without a mention', channel: 'CTEAM', channelType: 'channel', threadTs: opening.ts });
    expect((await plain.res).status).toBe(200);
    expect((await delivered('answer to: third, without a mention')).args.thread_ts).toBe(opening.ts);
    expect((await admissionOf(plain.eventId)).sessionId).toBe((await admissionOf(opening.eventId)).sessionId);
    // …but in someone else's thread it does.
    const elsewhere = send({ user: ALLOWED, text: 'not for the bot', channel: 'CTEAM', channelType: 'channel', threadTs: '1700000000.000001' });
    expect((await elsewhere.res).status).toBe(200);
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id = $1`, [elsewhere.eventId]);
    expect(rows).toHaveLength(0);
    // Someone the platform does not allow, talking in our thread without writing to the bot, is
    // ignored: no refusal posted into the thread for a message never addressed to us.
    const posted = fakeSlack.posts().length;
    const chatter = send({ user: 'UEVE', text: 'lunch anyone?', channel: 'CTEAM', channelType: 'channel', threadTs: opening.ts });
    expect((await chatter.res).status).toBe(200);
    // A refusal is committed before Slack gets its 200: none was.
    expect((await rt.db.pool.query(`SELECT 1 FROM inbound_events WHERE event_id = 'refusal:UEVE'`)).rows).toHaveLength(0);
    // Addressed to the bot, in the same thread, they get the one refusal.
    const asked = send({ type: 'app_mention', user: 'UEVE', text: '<@UBOT> can I ask too?', channel: 'CTEAM', threadTs: opening.ts });
    expect((await asked.res).status).toBe(200);
    const refusal = await eventually(() => fakeSlack.posts().slice(posted).find((c) => /allowed/.test(String(c.args.text))), 'the refusal of the mention');
    expect(refusal.args.thread_ts).toBe(opening.ts);
    expect(fakeSlack.posts().slice(posted).filter((c) => /allowed/.test(String(c.args.text)))).toHaveLength(1);
    const { rows: dedupe } = await rt.db.pool.query<{ event_id: string }>(`SELECT event_id FROM inbound_events WHERE event_id IN ($1, 'refusal:UEVE')`, [chatter.eventId]);
    expect(dedupe.map((r) => r.event_id)).toEqual(['refusal:UEVE']);
  });

  it('keeps one session per participant in a group DM, and one per thread in a channel (groupPolicy all, allow-all)', async () => {
    const teamHook = `${gw.url}/hooks/slack/default/team`;
    const sendTeam = (m: SlackMessageInput) => {
      const ev = slackEvent(m);
      return { ...ev, res: signedPost(ev.body, {}, teamHook) };
    };
    const alice = sendTeam({ user: ALLOWED, text: 'mpim from alice', channel: 'GMPIM', channelType: 'mpim' });
    const stranger = sendTeam({ user: STRANGER, text: 'mpim from a stranger', channel: 'GMPIM', channelType: 'mpim' });
    expect((await alice.res).status).toBe(200);
    expect((await stranger.res).status).toBe(200);
    const [a, b] = [await admissionOf(alice.eventId), await admissionOf(stranger.eventId)];
    expect(a.sessionId).not.toBe(b.sessionId);
    expect(await sessionKey(a.sessionId)).toBe(`agent:default/team:slack:group:GMPIM:${ALLOWED}`);
    expect((await delivered('answer to: mpim from alice')).args.thread_ts).toBeUndefined();
    await delivered('answer to: mpim from a stranger'); // allowAll: everyone may talk

    // groupPolicy all: a plain channel message is a turn, in a thread under it; its app_mention copy is not.
    const top = sendTeam({ user: STRANGER, text: '<@UBOT> plain channel message', channel: 'CALL', channelType: 'channel' });
    const mention = sendTeam({ type: 'app_mention', user: STRANGER, text: '<@UBOT> plain channel message', channel: 'CALL' });
    await Promise.all([top.res, mention.res]);
    expect(await sessionKey((await admissionOf(top.eventId)).sessionId)).toBe(`agent:default/team:slack:group:CALL:${top.ts}`);
    expect((await delivered('answer to: plain channel message')).args.thread_ts).toBe(top.ts);
    expect(model.requests.filter((r) => lastUser(r.body) === 'plain channel message')).toHaveLength(1);
  });

  it('gives a user who is not allowed one polite refusal, and never calls the model for them', async () => {
    const calls = model.requests.length;
    const first = send({ user: STRANGER, text: 'let me in', channel: 'DMALLORY', channelType: 'im' });
    expect((await first.res).status).toBe(200);
    const refusal = await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DMALLORY'), 'the refusal');
    expect(refusal.args.text).toMatch(/allowed/);
    const again = send({ user: STRANGER, text: 'please?', channel: 'DMALLORY', channelType: 'im' });
    expect((await again.res).status).toBe(200);
    // The second message is acknowledged and dropped: the user's refusal was already recorded.
    const { rows } = await rt.db.pool.query<{ n: number; content: string }>(
      `SELECT count(*)::int AS n, min(a.content) AS content FROM admissions a JOIN users u ON u.id = a.user_id JOIN agents g ON g.id = a.agent_id
       WHERE u.platform_user_id = $1 AND g.name = 'demo'`, [STRANGER]);
    expect(rows[0]!.n).toBe(1);
    expect(rows[0]!.content).not.toContain('let me in');
    expect(model.requests.length).toBe(calls);
    expect(fakeSlack.posts().filter((c) => c.args.channel === 'DMALLORY')).toHaveLength(1);
  });

  // A text past HERMES_MAX_MESSAGE_CHARS was a 400 (past 40 000 characters already, the parser's own
  // bound): Slack sent the event again and again and the user heard nothing.
  it('acknowledges a message past HERMES_MAX_MESSAGE_CHARS and answers it once with the limit, never calling the model', async () => {
    const calls = model.requests.length;
    const m = send({ user: ALLOWED, text: 'x'.repeat(MAX_CHARS + 1), channel: 'DTOOLONG', channelType: 'im' });
    expect((await m.res).status).toBe(200);
    const answer = await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DTOOLONG'), 'the too-long answer');
    expect(answer.args.text).toBe(`Your message has ${MAX_CHARS + 1} characters; this agent takes at most ${MAX_CHARS}. Please shorten it or send it in parts.`);
    // Slack's retry of the same event is acknowledged and answered no second time.
    expect((await signedPost(m.body, { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' })).status).toBe(200);
    const { rows } = await rt.db.pool.query<{ n: number; content: string }>(
      `SELECT count(*)::int AS n, min(a.content) AS content FROM admissions a JOIN inbound_events e ON e.admission_id = a.id WHERE e.event_id LIKE '%' || $1`, [m.eventId]);
    expect(rows[0]!.n).toBe(1);
    expect(rows[0]!.content).not.toContain('xxxx'); // not stored
    expect(fakeSlack.posts().filter((c) => c.args.channel === 'DTOOLONG')).toHaveLength(1);
    expect(model.requests.length).toBe(calls);
  });

  it('splits a long reply at Slack\'s limit, in order, in the thread', async () => {
    const m = send({ type: 'app_mention', user: ALLOWED, text: '<@UBOT> long story', channel: 'CLONG' });
    await m.res;
    const pieces = await eventually(() => {
      const p = fakeSlack.posts().filter((c) => c.args.channel === 'CLONG');
      return p.length === 3 ? p : undefined;
    }, 'three pieces');
    expect(pieces.map((p) => (p.args.text ?? '').length).every((n) => n <= 4_000)).toBe(true);
    expect(pieces.map((p) => (p.args.text ?? '')[0])).toEqual(['a', 'b', 'c']);
    expect(pieces.every((p) => p.args.thread_ts === m.ts)).toBe(true);
  });

  it('honours a 429 with Retry-After without spending an attempt, then delivers once', async () => {
    fakeSlack.rateLimitNext(1, 1);
    const m = send({ user: ALLOWED, text: 'rate limited please', channel: 'DRATE', channelType: 'im' });
    await m.res;
    await delivered('answer to: rate limited please');
    const adm = await admissionOf(m.eventId);
    const ob = await deliveredObligation(rt.db.pool, adm.id, 'the obligation delivered');
    expect(ob.attempts).toBe(1);
    const toChannel = fakeSlack.calls.filter((c) => c.args.channel === 'DRATE');
    expect(toChannel.map((c) => c.status)).toEqual([429, 200]);
    expect(postsWith('answer to: rate limited please')).toHaveLength(1);
  });

  it('re-sends a reply whose delivering worker died mid-send, marked as a possible duplicate', async () => {
    // A reply obligation another worker had claimed (attempting) when it died.
    const dead = await registerInstance(rt.db.pool, 'worker');
    const answered = await admitAnswered(rt.db, {
      agentId, platform: 'slack', sessionKey: 'agent:default/demo:slack:dm:DDEAD', user: { platformUserId: ALLOWED }, eventId: 'dead-owner-1',
      content: 'question', replyTarget: { kind: 'slack', channel: 'DDEAD' },
    }, 'the reply that was being sent');
    const claimed = await claimDelivery(rt.db.pool, answered.obligationId!, dead, { instanceTtlSeconds: 3, steady: false }, 600);
    expect(claimed?.state).toBe('attempting');
    await markStopped(rt.db.pool, dead.id);
    const resent = await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DDEAD'), 'the re-send');
    expect(resent.args.text).toBe(`♻️ (${duplicateMarker})\n\nthe reply that was being sent`);
    const ob = await deliveredObligation(rt.db.pool, answered.admissionId, 'delivered');
    expect(ob.possibleDuplicate).toBe(true);
    expect(fakeSlack.posts().filter((c) => c.args.channel === 'DDEAD')).toHaveLength(1);
  });

  it('stores a silence token as the reply and sends nothing', async () => {
    const m = send({ user: ALLOWED, text: 'say nothing', channel: 'DSILENT', channelType: 'im' });
    await m.res;
    const adm = await admissionOf(m.eventId);
    const ob = await deliveredObligation(rt.db.pool, adm.id, 'the silent reply settled');
    expect(ob.content).toBe('NO_REPLY');
    expect(ob.attempts).toBe(0); // settled delivered with the turn's end: no delivery attempt, nothing sent
    // Something sent after it arrives; nothing for the silent one.
    const after = send({ user: ALLOWED, text: 'and now speak', channel: 'DSILENT', channelType: 'im' });
    await after.res;
    await delivered('answer to: and now speak');
    expect(fakeSlack.calls.filter((c) => c.args.channel === 'DSILENT').map((c) => c.args.text)).toEqual(['answer to: and now speak']);
  });

  it('answers `!help` at once, naming the commands as Slack users write them', async () => {
    const m = send({ user: ALLOWED, text: '!help', channel: 'DHELP', channelType: 'im' });
    await m.res;
    const help = await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DHELP')?.args.text as string | undefined, 'the help post');
    expect(help).toContain('!retry — ');
    // Escaped as Slack asks, so Slack shows `<message>` instead of reading it as a link.
    expect(help).toContain('!queue &lt;message&gt; (or !q) — ');
    expect(help).not.toMatch(/(^|\s)\/retry/);
  });

  it('takes a NUL in a command\'s text as any other text (U+FFFD): `!kanban create` answers, not a 500 Slack retries', async () => {
    const m = send({ user: ALLOWED, text: '!kanban create buy\u0000milk', channel: 'DNULCMD', channelType: 'im' });
    expect((await m.res).status).toBe(200);
    const reply = await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DNULCMD'), 'the /kanban reply');
    expect(reply.args.text).toMatch(/^Created t_\S+ \[\w+\] buy\uFFFDmilk/);
  });

  it('takes `!status` with a NUL right after the word as the /status command, not a message for the model', async () => {
    const calls = model.requests.length;
    const m = send({ user: ALLOWED, text: '!status\u0000', channel: 'DNULWORD', channelType: 'im' });
    expect((await m.res).status).toBe(200);
    const reply = await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DNULWORD'), 'the /status reply');
    expect(reply.args.text).toMatch(/^Conversation \S+\./);
    expect(model.requests.length).toBe(calls);
    const queued = send({ user: ALLOWED, text: '!queue\u0000\u0000say hi', channel: 'DNULWORD2', channelType: 'im' });
    await queued.res;
    const { rows } = await rt.db.pool.query<{ content: string }>(`SELECT content FROM admissions WHERE id = $1`, [(await admissionOf(queued.eventId)).id]);
    expect(rows[0]!.content).toBe('say hi');
    await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DNULWORD2'), 'the queued message\'s answer');
  });

  it('answers `!undo`, a Hermes command this runtime lacks, at once and without the model, naming commands as Slack writes them', async () => {
    const calls = model.requests.length;
    const m = send({ user: ALLOWED, text: '!undo', channel: 'DUNDO', channelType: 'im' });
    await m.res;
    const reply = await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DUNDO'), 'the !undo reply');
    expect(reply.args.text).toMatch(/^!undo is not available here: .* !retry answers your last message afresh .* !new starts over\.$/);
    expect(model.requests.length).toBe(calls);
  });

  it('takes `!usage` as the /usage command: answered without the model', async () => {
    const calls = model.requests.length;
    const m = send({ user: ALLOWED, text: '!usage', channel: 'DCMD', channelType: 'im' });
    await m.res;
    const reply = await eventually(() => fakeSlack.posts().find((c) => c.args.channel === 'DCMD'), 'the /usage reply');
    const { rows } = await rt.db.pool.query<{ content: string }>(`SELECT content FROM admissions WHERE id = $1`, [(await admissionOf(m.eventId)).id]);
    expect(rows[0]!.content).toBe('/usage');
    expect(reply.args.text).not.toMatch(/^answer to:/);
    expect(model.requests.length).toBe(calls);
  });
});
