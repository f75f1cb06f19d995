// The delivery ledger against a fake Slack (the real @slack/web-api client over HTTP), on real
// Postgres and Redis: a split reply records each piece, so a retry after a failed (or rate-limited)
// later piece sends only the rest; a worker process SIGKILLed while its send hangs leaves an
// `attempting` row whose re-send (by another worker) carries the duplicate marker, and nothing is
// sent twice unmarked; pruning keeps 500 settled rows per session. Progress while a turn runs:
// Slack's "working…" message, and the typing indicator of Telegram, Discord and Teams (each
// against its fake platform, the bot token checked by the fake).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admit, admitAnswered, countDeliveriesByState, enqueueTurn, createMetrics, duplicateMarker, enqueueDelivery, getObligationForAdmission, pruneDeliveries, registerInstance, type CompiledAgent,
} from '../../../services/core/index.js';
import { staticSecrets, type SecretData } from '../../../services/agent/index.js';
import { deliver, platformAdapters, type RunningWorker } from '../../../services/worker/index.js';
import { ProcessGroup } from '../../chaos/processes.js';
import { startFakeSlack, type FakeSlack } from '../../support/fake-slack.js';
import { startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { startFakeTelegram, type FakeTelegram } from '../../support/fake-telegram.js';
import { snowflake, startFakeDiscord, type FakeDiscord } from '../../support/fake-discord.js';
import { startFakeTeams, type FakeTeams } from '../../support/fake-teams.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, deliveredObligation, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';

const BOT_TOKEN = 'xoxb-delivery-bot';
const slackSecret: SecretData = { namespace: 'default', name: 'slack', data: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: 'unused-here' } };
const platform: NonNullable<CompiledAgent['platforms']>[number] = { type: 'slack', credentialsSecret: 'slack', allowlist: ['UALICE'], allowAll: false, dmPairing: false, groupPolicy: 'mention' };
const marker = `♻️ (${duplicateMarker})\n\n`;

type Platform = NonNullable<CompiledAgent['platforms']>[number];
const TG_TOKEN = '333333:typing-bot-token-CCCC';
const DISCORD_TOKEN = 'discord-typing-bot-token';
const teamsApp = { appId: 'a1b2c3d4-0000-4000-8000-0000000typing', password: 'teams-typing-password', tenantId: 'tenant-1' };
const typingSecrets: SecretData[] = [
  { namespace: 'default', name: 'telegram', data: { TELEGRAM_BOT_TOKEN: TG_TOKEN } },
  { namespace: 'default', name: 'discord', data: { DISCORD_BOT_TOKEN: DISCORD_TOKEN } },
  { namespace: 'default', name: 'teams', data: { TEAMS_APP_ID: teamsApp.appId, TEAMS_APP_PASSWORD: teamsApp.password, TEAMS_TENANT_ID: teamsApp.tenantId } },
];
const typingPlatforms: Platform[] = (['telegram', 'discord', 'teams'] as const).map((type) => ({ type, credentialsSecret: type, allowlist: ['alice'], allowAll: false, dmPairing: false, groupPolicy: 'mention' }));

let database: TestDatabase;
let fake: FakeSlack;
let rt: TestRuntime;
let agentId: string;
let slowAgentId: string;
let model: FakeOpenAI;
let release: () => void = () => undefined;
let hold: Promise<void>;
let tg: FakeTelegram;
let dc: FakeDiscord;
let teamsFake: FakeTeams;
let typingAgentId: string;

beforeAll(async () => {
  database = await createTestDatabase();
  fake = await startFakeSlack(BOT_TOKEN);
  hold = new Promise<void>((r) => { release = r; });
  model = await startFakeOpenAI(() => ({ text: 'the slow answer', hold }));
  [tg, dc, teamsFake] = await Promise.all([startFakeTelegram(TG_TOKEN), startFakeDiscord(DISCORD_TOKEN), startFakeTeams(teamsApp)]);
  rt = await openTestRuntime(testConfig(database.url, {
    HERMES_SLACK_API_URL: fake.apiUrl, HERMES_PROGRESS_DELAY_SECONDS: 0.3, HERMES_PROGRESS_EDIT_SECONDS: 0.4,
    HERMES_TELEGRAM_API_URL: tg.url, HERMES_DISCORD_API_URL: dc.apiUrl, HERMES_TEAMS_API_URL: teamsFake.connectorUrl, HERMES_TEAMS_LOGIN_URL: teamsFake.loginUrl,
  }), 'delivery');
  agentId = await createTestAgent(rt, 'http://127.0.0.1:9/v1', { platforms: [platform] });
  slowAgentId = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'slow' }, platforms: [platform] });
  typingAgentId = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'typing' }, platforms: typingPlatforms });
});

/** Model calls from now on wait until the returned function is called. */
function holdTurns(): () => void {
  let open: () => void = () => undefined;
  hold = new Promise<void>((r) => { open = r; });
  return open;
}

/**
 * Runs one held turn of the typing agent on `platform` (reply to `replyTarget`), with a worker:
 * `whileRunning` sees the turn past the progress delay; then the turn ends and its reply is
 * delivered. Returns the admission id.
 */
async function heldTurn(platform: string, replyTarget: Record<string, unknown>, whileRunning: () => Promise<void>): Promise<string> {
  const worker = await startTestWorker(rt, { secrets: typingSecrets });
  const open = holdTurns();
  try {
    const a = await admit(rt.db, {
      agentId: typingAgentId, platform, sessionKey: `agent:default/typing:${platform}:dm:${++n}`, user: { platformUserId: 'alice' }, eventId: `typing-${n}`,
      content: 'think hard', replyTarget,
    });
    await enqueueTurn(rt.queues, { admissionId: a.admissionId, sessionId: a.sessionId });
    await whileRunning();
    open();
    await deliveredObligation(rt.db.pool, a.admissionId, 'the reply delivered');
    return a.admissionId;
  } finally {
    open();
    await worker.close();
  }
}

const progressRows = async (admissionId: string) => (await rt.db.pool.query(`SELECT 1 FROM progress_messages WHERE admission_id = $1`, [admissionId])).rowCount;
const pause = (millis: number) => new Promise<void>((r) => setTimeout(r, millis));

afterAll(async () => {
  await rt?.close();
  await fake?.close();
  await tg?.close();
  await dc?.close();
  await teamsFake?.close();
  await model?.close();
  await database?.drop();
});

let n = 0;
/** A reply owed to Slack channel `channel` (an answered admission and its pending obligation). */
async function owed(channel: string, reply: string): Promise<{ admissionId: string; obligationId: string }> {
  const a = await admitAnswered(rt.db, {
    agentId, platform: 'slack', sessionKey: `agent:default/demo:slack:dm:${channel}`, user: { platformUserId: 'UALICE' }, eventId: `delivery-${++n}`,
    content: 'question', replyTarget: { kind: 'slack', channel },
  }, reply);
  return { admissionId: a.admissionId, obligationId: a.obligationId! };
}

async function deliveryDeps() {
  const instance = await registerInstance(rt.db.pool, 'worker');
  const secrets = staticSecrets([slackSecret]);
  return { config: rt.config, db: rt.db, redis: rt.redis, instance, log: rt.log, metrics: createMetrics('worker'), adapters: platformAdapters({ config: rt.config, agents: rt.agents, secrets }) };
}

const lastError = async (admissionId: string) => (await rt.db.pool.query<{ last_error: string | null }>(`SELECT last_error FROM delivery_obligations WHERE admission_id = $1`, [admissionId])).rows[0]?.last_error;
const dueNow = (id: string) => rt.db.pool.query(`UPDATE delivery_obligations SET not_before = now() WHERE id = $1`, [id]);
const sentTo = (channel: string) => fake.calls.filter((c) => c.method === 'chat.postMessage' && c.args.channel === channel);
const long = `${'a'.repeat(3_990)} ${'b'.repeat(3_990)} ${'c'.repeat(100)}`;

describe('platform delivery', () => {
  it('a split reply whose second piece fails: the retry sends only the rest', async () => {
    const deps = await deliveryDeps();
    const { obligationId, admissionId } = await owed('DSPLIT', long);
    fake.failNext(1, 500, 1); // the first piece goes out, the second fails
    expect(await deliver(deps, obligationId)).toBe('failed');
    let ob = (await getObligationForAdmission(rt.db.pool, admissionId))!;
    expect([ob.state, ob.piecesSent, ob.attempts]).toEqual(['failed', 1, 1]);
    await dueNow(obligationId);
    expect(await deliver(deps, obligationId)).toBe('delivered');
    ob = (await getObligationForAdmission(rt.db.pool, admissionId))!;
    expect([ob.state, ob.piecesSent, ob.attempts, ob.possibleDuplicate]).toEqual(['delivered', 3, 2, false]);
    expect(sentTo('DSPLIT').map((c) => [c.status, (c.args.text ?? '')[0]])).toEqual([[200, 'a'], [500, 'b'], [200, 'b'], [200, 'c']]);
  });

  it('a 429 then 200: a rate limit on a later piece defers without spending an attempt, and the retry sends only the rest', async () => {
    const deps = await deliveryDeps();
    const { obligationId, admissionId } = await owed('DLIMIT', long);
    fake.rateLimitNext(1, 1, 1);
    expect(await deliver(deps, obligationId)).toBe('deferred');
    let ob = (await getObligationForAdmission(rt.db.pool, admissionId))!;
    expect([ob.state, ob.piecesSent, ob.attempts]).toEqual(['pending', 1, 0]);
    expect(await deliver(deps, obligationId)).toBe('skipped'); // not before Retry-After
    await dueNow(obligationId);
    expect(await deliver(deps, obligationId)).toBe('delivered');
    ob = (await getObligationForAdmission(rt.db.pool, admissionId))!;
    expect([ob.state, ob.attempts]).toEqual(['delivered', 1]);
    expect(sentTo('DLIMIT').map((c) => [c.status, (c.args.text ?? '')[0]])).toEqual([[200, 'a'], [429, 'b'], [200, 'b'], [200, 'c']]);
  });

  it('a 429 in a worker: the delivery job itself waits for Retry-After and sends then, without the sweeper', async () => {
    // No sweeper: before, a deferred row waited for its pass (HERMES_SWEEP_GRACE_SECONDS after the
    // attempt, then up to HERMES_SWEEP_SECONDS more) whatever Retry-After said; here it would never go.
    const worker = await startTestWorker(rt, { sweeper: false, secrets: [slackSecret] });
    try {
      const { obligationId, admissionId } = await owed('DWAKE', 'after the rate limit');
      fake.rateLimitNext(1, 1);
      await enqueueDelivery(rt.queues, { obligationId });
      const ob = await deliveredObligation(rt.db.pool, admissionId, 'delivered after Retry-After');
      expect(ob.attempts).toBe(1);
      expect(sentTo('DWAKE').map((c) => [c.status, c.args.text])).toEqual([[429, 'after the rate limit'], [200, 'after the rate limit']]);
    } finally {
      await worker.close();
    }
  });

  it('abandons a reply after 3 failed attempts', async () => {
    const deps = await deliveryDeps();
    const { obligationId, admissionId } = await owed('DFAIL', 'never arrives');
    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) {
      fake.failNext(1, 503);
      outcomes.push(await deliver(deps, obligationId));
      await dueNow(obligationId);
    }
    expect(outcomes).toEqual(['failed', 'failed', 'abandoned']);
    expect((await getObligationForAdmission(rt.db.pool, admissionId))!.state).toBe('abandoned');
    expect(await deliver(deps, obligationId)).toBe('skipped');
  });

  it('a refusal for good (an archived channel) abandons the reply at once; a refusal an operator can mend (an outage) is retried', async () => {
    const deps = await deliveryDeps();
    fake.refused.set('CARCHIVED', 'is_archived');
    const gone = await owed('CARCHIVED', 'to an archived channel');
    const outage = await owed('COUTAGE', 'through an outage');
    fake.failNext(1, 503);
    expect(await deliver(deps, outage.obligationId)).toBe('failed');
    expect(await deliver(deps, gone.obligationId)).toBe('abandoned');
    const ob = (await getObligationForAdmission(rt.db.pool, gone.admissionId))!;
    expect([ob.state, ob.attempts]).toEqual(['abandoned', 1]);
    expect(await lastError(gone.admissionId)).toMatch(/refused the reply for good: Slack answered is_archived/);
    await dueNow(gone.obligationId);
    expect(await deliver(deps, gone.obligationId)).toBe('skipped');
    expect(sentTo('CARCHIVED')).toHaveLength(1);
    await dueNow(outage.obligationId);
    expect(await deliver(deps, outage.obligationId)).toBe('delivered');
    const counted = (await deps.metrics.deliveries.get()).values.filter((v) => v.labels.platform === 'slack').map((v) => [v.labels.outcome, v.value]);
    expect(counted.sort()).toEqual([['abandoned', 1], ['delivered', 1], ['failed', 1]]);
  });

  it('Telegram, Discord, Teams: a chat closed to the bot is abandoned on the first attempt; a group that became a supergroup gets its reply there', async () => {
    const deps = { ...(await deliveryDeps()), adapters: platformAdapters({ config: rt.config, agents: rt.agents, secrets: staticSecrets(typingSecrets) }) };
    const owedOn = async (platform: string, replyTarget: Record<string, unknown>) => {
      const a = await admitAnswered(rt.db, {
        agentId: typingAgentId, platform, sessionKey: `agent:default/typing:${platform}:dm:refused-${++n}`, user: { platformUserId: 'alice' }, eventId: `refused-${n}`,
        content: 'question', replyTarget,
      }, 'an answer');
      return { admissionId: a.admissionId, obligationId: a.obligationId! };
    };
    const settled = async (o: { admissionId: string; obligationId: string }) => {
      const outcome = await deliver(deps, o.obligationId);
      const ob = (await getObligationForAdmission(rt.db.pool, o.admissionId))!;
      return [outcome, ob.state, ob.attempts, await lastError(o.admissionId)];
    };
    tg.refusedChats.set('4242', { code: 403, description: 'Forbidden: bot was blocked by the user' });
    expect(await settled(await owedOn('telegram', { kind: 'telegram', chatId: 4242 }))).toEqual(['abandoned', 'abandoned', 1, expect.stringMatching(/Telegram answered 403: Forbidden: bot was blocked by the user/)]);
    tg.refusedChats.set('-4343', { code: 400, description: 'Bad Request: group chat was upgraded to a supergroup chat', parameters: { migrate_to_chat_id: -1_004_343 } });
    expect(await settled(await owedOn('telegram', { kind: 'telegram', chatId: -4343, replyTo: 12 }))).toEqual(['delivered', 'delivered', 1, null]);
    const moved = tg.calls.filter((c) => c.method === 'sendMessage' && c.ok && c.args.chat_id === -1_004_343);
    expect(moved.map((c) => [c.args.text, c.args.reply_parameters])).toEqual([['an answer', undefined]]); // the old group's message id is not quoted there
    // A 400 that names nothing gone (an outage-like refusal) is an ordinary failure.
    tg.failNext('sendMessage', 1, 502);
    expect((await settled(await owedOn('telegram', { kind: 'telegram', chatId: 4444 })))[1]).toBe('failed');

    const dm = snowflake();
    dc.refusedChannels.set(dm, { status: 403, code: 50007, message: 'Cannot send messages to this user' });
    expect(await settled(await owedOn('discord', { kind: 'discord', channelId: dm }))).toEqual(['abandoned', 'abandoned', 1, expect.stringMatching(/Discord answered 403 \(code 50007\)/)]);
    const locked = snowflake();
    dc.refusedChannels.set(locked, { status: 401, code: 0, message: '401: Unauthorized' });
    expect((await settled(await owedOn('discord', { kind: 'discord', channelId: locked })))[1]).toBe('failed');

    const teamsTarget = (conversationId: string) => ({ kind: 'teams', serviceUrl: teamsFake.connectorUrl, conversationId });
    teamsFake.refusedConversations.set('a:removed', { status: 403, body: { error: { code: 'BotNotInConversationRoster', message: 'The bot is not part of the conversation roster.' } } });
    expect(await settled(await owedOn('teams', teamsTarget('a:removed')))).toEqual(['abandoned', 'abandoned', 1, expect.stringMatching(/HTTP 403 .*BotNotInConversationRoster/)]);
    teamsFake.refusedConversations.set('a:forbidden', { status: 403, body: { error: { code: 'Forbidden', message: 'token audience' } } });
    expect((await settled(await owedOn('teams', teamsTarget('a:forbidden'))))[1]).toBe('failed');
  });

  it('a worker process killed while its send hangs: the re-send by another worker carries the marker, nothing is sent twice unmarked', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hermes-delivery-'));
    await mkdir(join(dir, 'default', 'slack'), { recursive: true });
    for (const [k, v] of Object.entries(slackSecret.data)) await writeFile(join(dir, 'default', 'slack', k), v);
    const procs = new ProcessGroup(dir);
    let survivor: RunningWorker | undefined;
    try {
      const child = procs.spawn('worker', {
        DATABASE_URL: rt.config.DATABASE_URL, REDIS_URL: rt.config.REDIS_URL, HERMES_QUEUE_PREFIX: rt.config.HERMES_QUEUE_PREFIX,
        HERMES_WORKER_PORT: '0', HERMES_HOST: '127.0.0.1', HERMES_LOG_LEVEL: 'info', HERMES_SLACK_API_URL: fake.apiUrl,
        HERMES_SECRETS_SOURCE: 'files', HERMES_SECRETS_DIR: dir, HERMES_HEARTBEAT_SECONDS: '1', HERMES_INSTANCE_TTL_SECONDS: '3', HERMES_SWEEP_SECONDS: '1',
        // Its attempt's deadline: past it the row is claimable by anyone, dead owner judged or not.
        HERMES_DELIVERY_ATTEMPT_SECONDS: '6',
      });
      fake.hangNext(1); // the child's post reaches Slack, and no answer ever comes back
      const { obligationId, admissionId } = await owed('DKILL', 'the reply being sent when the worker died');
      await enqueueDelivery(rt.queues, { obligationId });
      await eventually(() => sentTo('DKILL').length === 1 || undefined, 'the child worker sends', 30_000);
      expect((await getObligationForAdmission(rt.db.pool, admissionId))!.state).toBe('attempting');
      await procs.kill(child, 'SIGKILL');

      survivor = await startTestWorker(rt, { secrets: [slackSecret] });
      const ob = await deliveredObligation(rt.db.pool, admissionId, 'the re-send by the surviving worker', 30_000);
      expect(ob.possibleDuplicate).toBe(true);
      const texts = sentTo('DKILL').map((c) => c.args.text);
      expect(texts).toEqual(['the reply being sent when the worker died', `${marker}the reply being sent when the worker died`]);
    } finally {
      await survivor?.close();
      await procs.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('shows one "working…" message while a turn runs, edits it (throttled) and removes it when the reply is delivered', async () => {
    const worker = await startTestWorker(rt, { secrets: [slackSecret] });
    try {
      const a = await admit(rt.db, {
        agentId: slowAgentId, platform: 'slack', sessionKey: 'agent:default/slow:slack:dm:DPROGRESS', user: { platformUserId: 'UALICE' }, eventId: 'progress-1',
        content: 'think hard', replyTarget: { kind: 'slack', channel: 'DPROGRESS' },
      });
      await enqueueTurn(rt.queues, { admissionId: a.admissionId, sessionId: a.sessionId });
      const calls = () => fake.calls.filter((c) => c.args.channel === 'DPROGRESS');
      const posted = await eventually(() => calls().find((c) => c.method === 'chat.postMessage' && c.ok), 'the working… message');
      expect(posted.args.text).toMatch(/^⏳ working… \(\d+ s/);
      await eventually(() => calls().filter((c) => c.method === 'chat.update').length >= 2 || undefined, 'edits while the turn runs');
      release();
      await eventually(() => calls().some((c) => c.method === 'chat.delete') || undefined, 'the working… message removed');
      const seen = calls().map((c) => c.method);
      expect((await rt.db.pool.query(`SELECT 1 FROM progress_messages WHERE admission_id = $1`, [a.admissionId])).rowCount).toBe(0);
      // One post for progress, edits of that same message only, the reply, then the delete of the progress message.
      expect(seen.filter((m) => m === 'chat.postMessage')).toHaveLength(2);
      const updates = calls().filter((c) => c.method === 'chat.update');
      // The edits and the delete all name the progress message (the ts Slack answered for its post).
      const progressTsOf = fake.calls.find((c) => c === posted)!;
      const del = calls().find((c) => c.method === 'chat.delete')!;
      expect(updates.every((u) => u.args.ts === del.args.ts)).toBe(true);
      expect(del.args.ts).toBeTruthy();
      expect(progressTsOf.args.text).not.toBe('the slow answer');
      expect(seen.lastIndexOf('chat.postMessage')).toBeLessThan(seen.indexOf('chat.delete'));
      expect(calls().filter((c) => c.method === 'chat.postMessage').at(-1)!.args.text).toBe('the slow answer');
      // Throttled: edits at most every 0.4 s.
      expect(updates.length).toBeLessThan(20);
    } finally {
      release();
      await worker.close();
    }
  });

  it('Telegram: a turn past the progress delay shows "typing" in the chat and topic (re-sent while it runs), and the reply arrives once', async () => {
    const target = { kind: 'telegram', chatId: -1_001_234, threadId: 7 };
    const forChat = () => tg.calls.filter((c) => c.args.chat_id === target.chatId);
    const admissionId = await heldTurn('telegram', target, async () => {
      await eventually(() => tg.chatActions().filter((c) => c.args.chat_id === target.chatId).length >= 2 || undefined, 'typing, re-sent while the turn runs');
    });
    const actions = tg.chatActions().filter((c) => c.args.chat_id === target.chatId);
    // The bot's own token (a wrong one answers 401 and is not ok), the action, the forum topic.
    expect(actions.every((c) => c.token === TG_TOKEN && c.args.action === 'typing' && c.args.message_thread_id === 7)).toBe(true);
    const seen = actions.length;
    await pause(1_000); // the turn is over: no more typing (edits every 0.4 s would have sent some)
    expect(tg.chatActions().filter((c) => c.args.chat_id === target.chatId)).toHaveLength(seen);
    expect(forChat().filter((c) => c.method === 'sendMessage').map((c) => [c.ok, c.args.text, c.args.message_thread_id])).toEqual([[true, 'the slow answer', 7]]);
    expect(forChat().filter((c) => c.method !== 'sendMessage' && c.method !== 'sendChatAction')).toEqual([]);
    expect(await progressRows(admissionId)).toBe(0);
  });

  it('Discord: a turn past the progress delay triggers typing in the channel as the bot (re-sent while it runs); an /ask turn shows none', async () => {
    const channelId = snowflake();
    const forChannel = () => dc.calls.filter((c) => c.path.startsWith(`/channels/${channelId}/`));
    const typingPath = `/channels/${channelId}/typing`;
    const admissionId = await heldTurn('discord', { kind: 'discord', channelId, replyTo: snowflake() }, async () => {
      await eventually(() => dc.typing().filter((c) => c.path === typingPath).length >= 2 || undefined, 'typing, re-sent while the turn runs');
    });
    expect(dc.typing().filter((c) => c.path === typingPath).every((c) => c.auth === `Bot ${DISCORD_TOKEN}`)).toBe(true);
    const seen = dc.typing().filter((c) => c.path === typingPath).length;
    await pause(1_000);
    expect(dc.typing().filter((c) => c.path === typingPath)).toHaveLength(seen);
    expect(forChannel().filter((c) => c.path.endsWith('/messages')).map((c) => [c.status, c.body.content])).toEqual([[200, 'the slow answer']]);
    expect(await progressRows(admissionId)).toBe(0);

    // `/ask`: the deferred "thinking…" shows progress already; the reply replaces it, no typing.
    const askChannel = snowflake();
    const token = `itok-${snowflake()}`;
    const interaction = { applicationId: dc.applicationId, token, expiresAt: Date.now() + 15 * 60_000 };
    await heldTurn('discord', { kind: 'discord', channelId: askChannel, interaction }, () => pause(1_200));
    expect(dc.calls.filter((c) => c.path.startsWith(`/channels/${askChannel}/`))).toEqual([]);
    expect(dc.calls.filter((c) => c.path.includes(token)).map((c) => [c.method, c.status, c.body.content])).toEqual([['PATCH', 200, 'the slow answer']]);
  });

  it('Teams: a turn past the progress delay posts typing activities to the conversation (re-sent while it runs), and the reply arrives once', async () => {
    const conversationId = `a:typing-${snowflake()}`;
    const target = { kind: 'teams', serviceUrl: 'https://smba.trafficmanager.net/amer/', conversationId };
    const typing = () => teamsFake.typing().filter((c) => c.conversationId === conversationId);
    const admissionId = await heldTurn('teams', target, async () => {
      await eventually(() => typing().length >= 2 || undefined, 'typing, re-sent while the turn runs');
    });
    // The connector accepted them: each carried a bearer token its token endpoint issued for the app.
    expect(typing().every((c) => c.status === 200 && c.token && JSON.stringify(c.body) === '{"type":"typing"}')).toBe(true);
    const seen = typing().length;
    await pause(1_000);
    expect(typing()).toHaveLength(seen);
    expect(teamsFake.calls.filter((c) => c.conversationId === conversationId && c.body.type !== 'typing').map((c) => [c.method, c.status, c.body.text])).toEqual([['POST', 200, 'the slow answer']]);
    expect(await progressRows(admissionId)).toBe(0);
  });

  it('prunes settled obligations past 500 per session, never those still owed', async () => {
    const { admissionId } = await owed('DPRUNE', 'kept while owed');
    const { rows } = await rt.db.pool.query<{ session_id: string }>(`SELECT session_id FROM delivery_obligations WHERE admission_id = $1`, [admissionId]);
    const session = rows[0]!.session_id;
    // 505 delivered replies in the same session, all older than the owed one.
    for (let i = 0; i < 505; i++) {
      const old = await admitAnswered(rt.db, {
        agentId, platform: 'slack', sessionKey: 'agent:default/demo:slack:dm:DPRUNE', user: { platformUserId: 'UALICE' }, eventId: `prune-${i}`,
        content: 'old', replyTarget: { kind: 'slack', channel: 'DPRUNE' },
      }, 'old reply');
      await rt.db.pool.query(`UPDATE delivery_obligations SET state = 'attempting' WHERE id = $1`, [old.obligationId]);
      await rt.db.pool.query(`UPDATE delivery_obligations SET state = 'delivered', delivered_at = now(), created_at = now() - interval '1 hour' + make_interval(secs => $2) WHERE id = $1`, [old.obligationId, i]);
    }
    const before = await countDeliveriesByState(rt.db.pool);
    const pruned = await pruneDeliveries(rt.db.pool, 7 * 86_400, 500);
    const after = await countDeliveriesByState(rt.db.pool);
    const { rows: left } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM delivery_obligations WHERE session_id = $1 AND state = 'delivered'`, [session]);
    expect(left[0]!.n).toBe(500);
    expect(pruned).toBe(before.delivered - after.delivered);
    expect(after.pending).toBe(before.pending);
    expect((await getObligationForAdmission(rt.db.pool, admissionId))!.state).toBe('pending');
  });
});
