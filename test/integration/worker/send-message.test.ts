// send_message (issue 14 point 6) against fake Slack and Telegram, on real Postgres and Redis: the
// fake model calls the tool (toolsAsTold); the message becomes a delivery obligation of the turn
// keyed to the tool call and is sent by the delivery worker with the target platform's credentials
// of the same Agent — a home channel by name, an allowed explicit target on another platform than
// the conversation's (cross-platform), a thread of an allowed chat. Targets the Agent does not
// allow are refused with a clear tool error and nothing is sent; the same tool call recorded twice
// (a worker that crashed after recording it) is one obligation, sent once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission, getObligationForAdmission, type CompiledAgent } from '../../../services/core/index.js';
import type { SecretData } from '../../../services/agent/index.js';
import { deliver, platformAdapters, type RunningWorker } from '../../../services/worker/index.js';
import { turnMessaging } from '../../../services/worker/messaging.js';
import { startFakeSlack, type FakeSlack } from '../../support/fake-slack.js';
import { startFakeTelegram, type FakeTelegram } from '../../support/fake-telegram.js';
import { lastUser, startFakeOpenAI, toldResult, toolsAsTold, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { openTestRuntime, startTestWorker, testAgent, type TestRuntime } from '../../support/system.js';
import { publishRevision, registerInstance } from '../../../services/core/index.js';
import { staticSecrets } from '../../../services/agent/index.js';

const SLACK_TOKEN = 'xoxb-send-message-bot';
const TG_TOKEN = '444444:send-message-bot-token-DDDD';
const secrets: SecretData[] = [
  { namespace: 'default', name: 'slack', data: { SLACK_BOT_TOKEN: SLACK_TOKEN, SLACK_SIGNING_SECRET: 'unused-here' } },
  { namespace: 'default', name: 'telegram', data: { TELEGRAM_BOT_TOKEN: TG_TOKEN } },
];
type Platform = NonNullable<CompiledAgent['platforms']>[number];
const platforms: Platform[] = (['slack', 'telegram'] as const).map((type) => ({ type, credentialsSecret: type, allowlist: ['UALICE'], allowAll: false, dmPairing: false, groupPolicy: 'mention' }));

let database: TestDatabase;
let slack: FakeSlack;
let tg: FakeTelegram;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let agent: CompiledAgent;
let agentId: string;
let n = 0;

beforeAll(async () => {
  database = await createTestDatabase();
  [slack, tg] = await Promise.all([startFakeSlack(SLACK_TOKEN), startFakeTelegram(TG_TOKEN)]);
  model = await startFakeOpenAI(toolsAsTold);
  rt = await openTestRuntime(testConfig(database.url, { HERMES_SLACK_API_URL: slack.apiUrl, HERMES_TELEGRAM_API_URL: tg.url }), 'sendmsg');
  agent = testAgent(model.baseURL, {
    agent: { namespace: 'default', name: 'messenger' }, toolsets: ['clock', 'messaging'], platforms,
    messaging: { homeChannels: [{ name: 'ops', target: 'slack:COPS' }], allowedTargets: ['telegram:-100777:17', 'slack:CENG'] },
  });
  ({ agentId } = await publishRevision(rt.db, agent));
  worker = await startTestWorker(rt, { secrets });
});

afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await Promise.all([model?.close(), slack?.close(), tg?.close()]);
  await database?.drop();
});

/** One Slack DM turn whose message asks the fake model to call send_message with `args`: the tool's JSON result. */
async function slackTurn(args: Record<string, unknown>): Promise<{ result: Record<string, unknown>; admissionId: string }> {
  const i = ++n;
  const a = await admit(rt.db, {
    agentId, platform: 'slack', sessionKey: `agent:default/messenger:slack:dm:D${i}`, user: { platformUserId: 'UALICE' }, eventId: `ev-${i}`,
    content: `tool send_message ${JSON.stringify(args)}`, replyTarget: { kind: 'slack', channel: `D${i}` },
  });
  await enqueueTurn(rt.queues, { admissionId: a.admissionId, sessionId: a.sessionId });
  const reply = await eventually(async () => (await getAdmission(rt.db.pool, a.admissionId))?.state === 'terminal' ? (await getObligationForAdmission(rt.db.pool, a.admissionId))?.content : undefined, 'the turn');
  return { result: toldResult(reply), admissionId: a.admissionId };
}

const postsTo = (channel: string) => slack.posts().filter((p) => p.args.channel === channel);

describe('send_message', () => {
  it('sends to a named home channel through the delivery ledger, with the Agent\'s Slack credentials', async () => {
    const { result, admissionId } = await slackTurn({ target: 'ops', message: 'deploy finished' });
    expect(result).toMatchObject({ success: true, target: 'slack:COPS', delivery: 'queued for delivery' });
    const post = await eventually(() => postsTo('COPS')[0], 'the post to COPS');
    expect(post).toMatchObject({ token: SLACK_TOKEN, args: { channel: 'COPS', text: 'deploy finished' } });
    // The fake records the post as it arrives; the worker marks the row delivered once Slack has answered.
    const settled = async () => (await rt.db.pool.query<{ call_key: string; state: string }>(`SELECT call_key, state FROM delivery_obligations WHERE admission_id = $1 AND call_key <> ''`, [admissionId])).rows;
    await eventually(async () => (await settled()).every((r) => r.state !== 'attempting') || undefined, 'the send_message obligation settled');
    expect(await settled()).toEqual([{ call_key: 'send:t1', state: 'delivered' }]);
    // The turn's own reply still goes to the conversation it came from.
    await eventually(() => postsTo(`D${n}`)[0], 'the turn\'s reply in its DM');
  });

  it('delivers cross-platform: from a Slack conversation to an allowed Telegram forum topic', async () => {
    const { result } = await slackTurn({ target: 'telegram:-100777:17', message: 'hello from slack' });
    expect(result).toMatchObject({ success: true, target: 'telegram:-100777:17' });
    const sent = await eventually(() => tg.sent().find((c) => c.args.text === 'hello from slack'), 'the Telegram message');
    expect(sent).toMatchObject({ token: TG_TOKEN, args: { chat_id: -100777, message_thread_id: 17 } });
  });

  it('an allowed chat allows its threads; a bare platform name is its home channel', async () => {
    expect((await slackTurn({ target: 'slack:CENG:1712345678.000100', message: 'in the thread' })).result).toMatchObject({ success: true });
    await eventually(() => postsTo('CENG').find((p) => p.args.thread_ts === '1712345678.000100' && p.args.text === 'in the thread'), 'the threaded post');
    expect((await slackTurn({ target: 'slack', message: 'to the slack home' })).result).toMatchObject({ success: true, target: 'slack:COPS' });
  });

  it('refuses targets the Agent does not allow, with a clear error, and sends nothing', async () => {
    const first = n + 1;
    const other = await slackTurn({ target: 'slack:CSECRET', message: 'leak' });
    expect(other.result.error).toBe('slack:CSECRET is not an allowed target of this agent (Agent spec.messaging.allowedTargets). Nothing was sent; use action "list" for the targets you may use.');
    const topic = await slackTurn({ target: 'telegram:-100777:18', message: 'wrong topic' });
    expect(topic.result.error).toMatch(/^telegram:-100777:18 is not an allowed target/);
    expect((await slackTurn({ target: 'not a target', message: 'x' })).result.error).toMatch(/is neither a home channel \(ops\) nor a target written platform:chat_id\[:thread_id\]/);
    const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM delivery_obligations WHERE admission_id = ANY($1) AND call_key <> ''`, [[other.admissionId, topic.admissionId]]);
    expect(rows[0]!.n).toBe(0);
    // Their own replies went to their DMs (each awaited: deliveries are asynchronous, so counting all
    // posts would race with the earlier tests' deliveries); none of the refused messages went anywhere.
    for (let i = first; i <= n; i++) await eventually(() => postsTo(`D${i}`)[0], `the reply in D${i}`);
    const refused = ['leak', 'wrong topic', 'x'];
    expect(slack.posts().filter((p) => p.args.channel === 'CSECRET' || refused.includes(String(p.args.text)))).toEqual([]);
    expect(tg.sent().filter((c) => c.args.message_thread_id === 18 || refused.includes(String(c.args.text)))).toEqual([]);
  });

  it('lists the targets the agent may use', async () => {
    expect((await slackTurn({ action: 'list' })).result).toEqual({ home_channels: [{ name: 'ops', target: 'slack:COPS' }], allowed_targets: ['telegram:-100777:17', 'slack:CENG'] });
  });

  it('sends two different messages of one turn although the model gave both calls the same id', async () => {
    // Servers that send no id (call_0 each time) or number calls per response reuse ids across a
    // turn's model calls; the obligation is keyed to the id, so the second message was taken for a
    // repeat of the first and silently dropped ("already recorded by this call").
    model.setScript((b) => {
      if (!lastUser(b).startsWith('same id twice')) return toolsAsTold(b);
      const results = b.messages.filter((m) => m.role === 'tool').length;
      if (results >= 2) return { text: 'both sent' };
      return { toolCalls: [{ id: 'call_0', name: 'send_message', arguments: JSON.stringify({ target: 'ops', message: `same id message ${results + 1}` }) }] };
    });
    try {
      const a = await admit(rt.db, { agentId, platform: 'slack', sessionKey: 'agent:default/messenger:slack:dm:DSAMEID', user: { platformUserId: 'UALICE' }, eventId: 'ev-same-id', content: 'same id twice', replyTarget: { kind: 'slack', channel: 'DSAMEID' } });
      await enqueueTurn(rt.queues, { admissionId: a.admissionId, sessionId: a.sessionId });
      await eventually(async () => (await getAdmission(rt.db.pool, a.admissionId))?.state === 'terminal' || undefined, 'the turn');
      await eventually(() => postsTo('COPS').find((p) => p.args.text === 'same id message 2'), 'the second message');
      expect(postsTo('COPS').filter((p) => String(p.args.text).startsWith('same id message')).map((p) => p.args.text)).toEqual(['same id message 1', 'same id message 2']);
      // Each call and its result carry one id, unique in the transcript.
      const { rows } = await rt.db.pool.query<{ tool_calls: { id: string }[] | null; tool_call_id: string | null }>(`SELECT tool_calls, tool_call_id FROM messages WHERE session_id = $1 AND (tool_calls IS NOT NULL OR tool_call_id IS NOT NULL) ORDER BY seq`, [a.sessionId]);
      const callIds = rows.flatMap((r) => r.tool_calls?.map((c) => c.id) ?? []);
      expect(new Set(callIds).size).toBe(2);
      expect(rows.flatMap((r) => (r.tool_call_id ? [r.tool_call_id] : []))).toEqual(callIds);
    } finally {
      model.setScript(toolsAsTold);
    }
  });

  it('is idempotent per tool call: the same call recorded again (after a crash) is one obligation, sent once', async () => {
    const a = await admit(rt.db, { agentId, platform: 'slack', sessionKey: 'agent:default/messenger:slack:dm:DCRASH', user: { platformUserId: 'UALICE' }, eventId: 'ev-crash', content: 'x', replyTarget: { kind: 'slack', channel: 'DCRASH' } });
    const adm = (await getAdmission(rt.db.pool, a.admissionId))!;
    const log = rt.log;
    const messaging = turnMessaging({ db: rt.db, queues: rt.queues, log }, agent, adm)!;
    const first = await messaging.send('ops', 'exactly once', 'call-42');
    const again = await messaging.send('ops', 'exactly once', 'call-42');
    expect(first).toMatchObject({ ok: true, alreadySent: false });
    expect(again).toMatchObject({ ok: true, alreadySent: true });
    if (!first.ok || !again.ok) throw new Error('unreachable');
    expect(again.obligationId).toBe(first.obligationId);
    await eventually(() => postsTo('COPS').find((p) => p.args.text === 'exactly once'), 'the one post');
    // A second delivery attempt of the settled obligation sends nothing.
    const instance = await registerInstance(rt.db.pool, 'worker');
    const adapters = platformAdapters({ config: rt.config, agents: rt.agents, secrets: staticSecrets(secrets) });
    expect(await deliver({ config: rt.config, db: rt.db, redis: rt.redis, instance, log, metrics: rt.metrics, adapters }, first.obligationId)).toBe('skipped');
    expect(postsTo('COPS').filter((p) => p.args.text === 'exactly once')).toHaveLength(1);
  });
});
