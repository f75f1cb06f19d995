// DM pairing end to end over Slack: an unknown user's DM gets a code through the fake Slack Web
// API (never a model call); a second DM within 10 min gets one "still pending" reminder, a third
// nothing; the owner approves with `hermes pairing approve` (the real binary) or the admin API;
// the user is told and their next DM is a turn. Three pending requests fill the platform: the
// next unknown user gets a polite refusal. A wrong code via the admin API is a 404.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledAgent } from '../../../services/core/index.js';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { staticSecrets, type SecretData } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { slackEvent, slackSignedHeaders, startFakeSlack, type FakeSlack, type SlackMessageInput } from '../../support/fake-slack.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, startTestWorker, testModelSecret, type TestRuntime } from '../../support/system.js';

const BOT_TOKEN = 'xoxb-pairing-bot-token';
const SIGNING_SECRET = 'slack-signing-secret-pairing-0123456789';
const ADMIN_TOKEN = 'admin-token-for-pairing-tests';
const slackSecret: SecretData = { namespace: 'default', name: 'slack', data: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: SIGNING_SECRET } };
const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));

const slackPlatform: NonNullable<CompiledAgent['platforms']>[number] = {
  type: 'slack', credentialsSecret: 'slack', allowlist: ['UOWNER'], allowAll: false, dmPairing: true, groupPolicy: 'mention',
};

let database: TestDatabase;
let model: FakeOpenAI;
let fakeSlack: FakeSlack;
let rt: TestRuntime;
let worker: RunningWorker;
let gw: RunningGateway;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((body) => ({ text: `answer to: ${lastUser(body)}` }));
  fakeSlack = await startFakeSlack(BOT_TOKEN);
  rt = await openTestRuntime(testConfig(database.url, { HERMES_SLACK_API_URL: fakeSlack.apiUrl, HERMES_ADMIN_TOKEN: ADMIN_TOKEN }), 'pairing');
  await createTestAgent(rt, model.baseURL, { platforms: [slackPlatform] });
  // A second agent whose Slack has pairing off: strangers get the plain refusal.
  await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'closed' }, platforms: [{ ...slackPlatform, dmPairing: false }] });
  worker = await startTestWorker(rt, { secrets: [slackSecret] });
  gw = await startGateway({ ...rt, secrets: staticSecrets([testModelSecret, slackSecret]) });
});

afterAll(async () => {
  await gw?.close();
  await worker?.close();
  await rt?.close();
  await fakeSlack?.close();
  await model?.close();
  await database?.drop();
});

async function dm(user: string, text: string, agent = 'demo'): Promise<void> {
  const { body } = slackEvent({ user, text, channel: `D${user}`, channelType: 'im' } satisfies SlackMessageInput);
  const raw = JSON.stringify(body);
  const res = await fetch(`${gw.url}/hooks/slack/default/${agent}`, { method: 'POST', headers: slackSignedHeaders(SIGNING_SECRET, raw), body: raw });
  expect(res.status).toBe(200);
}

const postsTo = (user: string) => fakeSlack.posts().filter((c) => c.args.channel === `D${user}`).map((c) => c.args.text ?? '');
const nthPost = (user: string, n: number) => eventually(() => postsTo(user)[n - 1], `post ${n} to ${user}`);
const codeIn = (text: string) => /pairing code to the owner of this agent: ([A-Z2-9]{8})/.exec(text)?.[1];
const modelCallsFrom = (text: string) => model.requests.filter((r) => lastUser(r.body) === text).length;

function hermes(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH, DATABASE_URL: database.url, HERMES_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

const admin = (path: string, init: RequestInit = {}, token = ADMIN_TOKEN) =>
  fetch(`${gw.url}/v1/admin/agents/default/demo/pairings${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });

describe('DM pairing over Slack', () => {
  it('sends a code, reminds once, then stays silent; `hermes pairing approve` lets the user in and their next DM is a turn', async () => {
    await dm('UCAROL', 'hello, who are you?');
    const code = codeIn(await nthPost('UCAROL', 1));
    expect(code).toBeDefined();
    await dm('UCAROL', 'are you there?');
    expect(await nthPost('UCAROL', 2)).toMatch(/still waiting for the owner's approval/);
    await dm('UCAROL', 'hello??');
    // The third DM is acknowledged and answered with silence: give it the time a post would take.
    await dm('UOWNER', 'ping from the owner');
    await eventually(() => postsTo('UOWNER')[0], 'the owner\'s answer');
    expect(postsTo('UCAROL')).toHaveLength(2);
    expect(modelCallsFrom('hello, who are you?') + modelCallsFrom('are you there?') + modelCallsFrom('hello??')).toBe(0);
    // The code is stored only hashed, never as the message the user sent.
    const { rows } = await rt.db.pool.query<{ row: string }>(`SELECT row_to_json(p)::text AS row FROM pairing_requests p WHERE platform_user_id = 'UCAROL'`);
    expect(rows[0]!.row).not.toContain(code!);

    const list = await hermes('pairing', 'list', 'default/demo');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/pending {2}slack:UCAROL/);
    const wrong = await hermes('pairing', 'approve', 'default/demo', 'ZZZZZZZZ');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/No pending pairing request has this code/);
    const approved = await hermes('pairing', 'approve', 'default/demo', code!.toLowerCase());
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(/Approved slack:UCAROL/);
    // The approval notice is sent by the workers' sweeper (the CLI only writes the ledger).
    expect(await nthPost('UCAROL', 3)).toMatch(/approved your pairing request/);

    await dm('UCAROL', 'now may I ask?');
    expect(await nthPost('UCAROL', 4)).toBe('answer to: now may I ask?');
    expect((await hermes('pairing', 'list', 'default/demo')).stdout).toMatch(/paired {3}slack:UCAROL .*by cli:/);
  });

  it('approves through the admin API (bearer HERMES_ADMIN_TOKEN); a wrong code is a 404, a wrong token a 401', async () => {
    await dm('UDAVE', 'hi');
    const code = codeIn(await nthPost('UDAVE', 1))!;
    expect((await admin('', {}, 'not-the-token')).status).toBe(401);
    const listed = await admin('');
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as { pending: { userId: string }[] };
    expect(body.pending.map((p) => p.userId)).toContain('UDAVE');
    expect(JSON.stringify(body)).not.toContain(code);
    expect((await admin('/QQQQQQQQ/approve', { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await admin(`/${code}/approve`, { method: 'POST', body: '{"platform":"slack","by":"ops"}' })).status).toBe(200);
    expect(await nthPost('UDAVE', 2)).toMatch(/approved your pairing request/);
    await dm('UDAVE', 'my first real question');
    expect(await nthPost('UDAVE', 3)).toBe('answer to: my first real question');
    // Bad input: 400, nothing decided.
    expect((await admin(`/${code}/approve`, { method: 'POST', body: '{"unknown":1}' })).status).toBe(400);
  });

  it('keeps at most 3 requests pending: the fourth unknown user gets a polite refusal, never a code', async () => {
    const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pairing_requests WHERE state = 'pending'`);
    const already = rows[0]!.n;
    const waiting = ['UW1', 'UW2', 'UW3'].slice(0, 3 - already);
    for (const u of waiting) {
      await dm(u, 'let me in');
      expect(codeIn(await nthPost(u, 1))).toBeDefined();
    }
    await dm('UW4', 'me too');
    const refusal = await nthPost('UW4', 1);
    expect(codeIn(refusal)).toBeUndefined();
    expect(refusal).toMatch(/too many people are waiting/);
    expect(modelCallsFrom('let me in') + modelCallsFrom('me too')).toBe(0);
  });

  it('refuses a stranger politely where pairing is off, with no code', async () => {
    await dm('UEVE', 'hello closed agent', 'closed');
    const refusal = await nthPost('UEVE', 1);
    expect(refusal).toMatch(/allowed/);
    expect(codeIn(refusal)).toBeUndefined();
    const { rows } = await rt.db.pool.query(`SELECT 1 FROM pairing_requests WHERE platform_user_id = 'UEVE'`);
    expect(rows).toHaveLength(0);
  });
});
