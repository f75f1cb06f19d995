// The signed webhook end to end: requests signed as the docs say, posted to the real gateway,
// admitted in Postgres, run by the real worker against a fake model, replies POSTed (signed) to a
// callback receiver or stored and read with a signed GET; and the restricted toolset the model is
// offered in webhook turns.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { CompiledAgent } from '../../../services/core/index.js';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { builtinRegistry, defineTool, staticSecrets, type SecretData } from '../../../services/agent/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { lastUser, startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { startWebhookReceiver, webhookSignedHeaders, type WebhookReceiver } from '../../support/fake-webhook.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, deliveredObligation, openTestRuntime, runTurn, startTestWorker, testModelSecret, type TestRuntime } from '../../support/system.js';

const SECRET = 'webhook-secret-0123456789abcdef';
const webhookSecret: SecretData = { namespace: 'default', name: 'hooks', data: { WEBHOOK_SECRET: SECRET } };
const TOOLSETS = ['clock', 'todo', 'memory', 'session_search'];
const platform = (extra: Partial<NonNullable<CompiledAgent['platforms']>[number]> = {}): NonNullable<CompiledAgent['platforms']>[number] => ({
  type: 'webhook', credentialsSecret: 'hooks', allowlist: [], allowAll: false, dmPairing: false, groupPolicy: 'mention', ...extra,
});

let database: TestDatabase;
let model: FakeOpenAI;
let receiver: WebhookReceiver;
let rt: TestRuntime;
let worker: RunningWorker;
let gw: RunningGateway;
let demoId: string;
let releaseHeld!: () => void;
const heldUntilEnd = new Promise<void>((r) => { releaseHeld = r; });
// A tool that runs until the test lets it go: a message arriving meanwhile steers the turn.
let toolStarted!: () => void;
const toolRunning = new Promise<void>((r) => { toolStarted = r; });
let releaseTool: () => void = () => undefined;
const gate = defineTool({
  name: 'wait_for_go', description: 'Waits.', toolset: 'test', sideEffect: 'writes', schema: z.object({}).strict(),
  handler: () => new Promise<string>((resolve) => { releaseTool = () => resolve('went'); toolStarted(); }),
});

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI((body) => {
    const q = lastUser(body);
    // "hold …" stalls until the test ends (or the turn is interrupted: the request is cut).
    if (q.startsWith('hold ') && body.messages.at(-1)?.role === 'user') return { hold: heldUntilEnd, text: `done: ${q}` };
    if (q === 'use the tool' && body.messages.at(-1)?.role === 'user') return { toolCalls: [{ id: 'w1', name: 'wait_for_go', arguments: '{}' }] };
    if (body.messages.at(-1)?.role !== 'user' || q === 'make it blue') return { text: `saw: ${body.messages.filter((m) => m.role === 'user').map((m) => m.content).join(' | ')}` };
    return { text: `answer to: ${q}` };
  });
  receiver = await startWebhookReceiver(SECRET);
  rt = await openTestRuntime(testConfig(database.url), 'webhook');
  demoId = await createTestAgent(rt, model.baseURL, { toolsets: TOOLSETS, platforms: [platform({ callbackUrl: receiver.url })] });
  await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'stored' }, toolsets: TOOLSETS, platforms: [platform({ allowlist: ['ci'] })] });
  await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'wide' }, toolsets: TOOLSETS, platforms: [platform({ toolsets: ['clock', 'todo'] })] });
  await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'interrupted' }, busyPolicy: 'interrupt', toolsets: TOOLSETS, platforms: [platform({ callbackUrl: receiver.url })] });
  await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'steered' }, busyPolicy: 'steer', toolsets: ['test'], platforms: [platform({ callbackUrl: receiver.url, toolsets: ['test'] })] });
  worker = await startTestWorker(rt, { secrets: [webhookSecret], loop: { tools: builtinRegistry().register(gate) } });
  gw = await startGateway({ ...rt, secrets: staticSecrets([testModelSecret, webhookSecret]) });
});

afterAll(async () => {
  releaseHeld?.();
  releaseTool();
  await gw?.close();
  await worker?.close();
  await rt?.close();
  await receiver?.close();
  await model?.close();
  await database?.drop();
});

const hook = (agent = 'demo') => `${gw.url}/hooks/webhook/default/${agent}`;
const post = (raw: string, headers: Record<string, string>, agent = 'demo') => fetch(hook(agent), { method: 'POST', headers, body: raw });
const signedPost = (payload: unknown, extra: Record<string, string> = {}, agent = 'demo', ts?: number) => {
  const raw = JSON.stringify(payload);
  return post(raw, { ...webhookSignedHeaders(SECRET, raw, ts), ...extra }, agent);
};
const accepted = async (res: Response) => {
  expect(res.status).toBe(202);
  return (await res.json()) as { outcome: string; admissionId: string };
};
async function count(table: 'admissions' | 'inbound_events'): Promise<number> {
  const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]!.n;
}
const callbackWith = (text: string) => eventually(() => receiver.calls.find((c) => c.body.text === text && c.status === 204), `a callback "${text}"`);
// read_tool_result (this turn's own oversized results, in no toolset) is offered to every turn that can store them.
const toolsSeen = (question: string) => model.requests.find((r) => lastUser(r.body) === question)?.body.tools?.map((t) => t.function.name).filter((n) => n !== 'read_tool_result').sort() ?? [];

describe('signed webhook requests the gateway refuses, touching nothing', () => {
  it('refuses unsigned, badly signed, stale and future-dated requests with one 401', async () => {
    const raw = JSON.stringify({ text: 'hello', user: 'ci' });
    const now = Math.floor(Date.now() / 1000);
    const cases: Record<string, Record<string, string>> = {
      unsigned: { 'content-type': 'application/json' },
      'no signature': { 'content-type': 'application/json', 'x-hermes-timestamp': String(now) },
      'wrong secret': webhookSignedHeaders('not-the-secret', raw, now),
      'signature over another body': webhookSignedHeaders(SECRET, `${raw} `, now),
      '305 s old': webhookSignedHeaders(SECRET, raw, now - 305),
      '305 s ahead': webhookSignedHeaders(SECRET, raw, now + 305),
      'ten minutes ahead': webhookSignedHeaders(SECRET, raw, now + 600),
    };
    for (const [what, headers] of Object.entries(cases)) expect((await post(raw, headers)).status, what).toBe(401);
    const nobody = await signedPost({ text: 'hello', user: 'ci' }, {}, 'nobody');
    const wrong = await post(raw, webhookSignedHeaders('not-the-secret', raw));
    expect(nobody.status).toBe(401);
    expect(await nobody.text()).toBe(await wrong.text());
    expect(await count('admissions')).toBe(0);
    expect(model.requests).toHaveLength(0);
  });

  it('refuses malformed JSON, unknown fields, a reply_url and conflicting ids with 400', async () => {
    const bad = '{"text": ';
    expect((await post(bad, webhookSignedHeaders(SECRET, bad))).status).toBe(400);
    expect((await signedPost({ text: 'x' })).status).toBe(400); // no user
    const replyUrl = await signedPost({ text: 'x', user: 'ci', reply_url: 'http://169.254.169.254/' });
    expect(replyUrl.status).toBe(400);
    expect(((await replyUrl.json()) as { error: { message: string } }).error.message).toContain('callbackUrl');
    expect((await signedPost({ text: 'x', user: 'ci', extra: 1 })).status).toBe(400);
    expect((await signedPost({ text: 'x', user: 'ci', id: 'a' }, { 'idempotency-key': 'b' })).status).toBe(400);
    // Past HERMES_MAX_MESSAGE_CHARS (100 000) the sender is told that limit (the body's own bound was 40 000).
    const tooLong = await signedPost({ text: 'x'.repeat(100_001), user: 'ci' });
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as { error: { message: string } }).error.message).toContain('The message has 100001 characters; this gateway takes at most 100000 (HERMES_MAX_MESSAGE_CHARS).');
    expect(await count('admissions')).toBe(0);
  });
});

describe('signed webhook conversations', () => {
  it('admits a signed message and POSTs the reply, signed, to the Agent\'s callbackUrl', async () => {
    const res = await accepted(await signedPost({ text: 'build 42 failed, why?', user: 'ci', conversation: 'pipeline-42' }, { 'idempotency-key': 'delivery-1' }));
    expect(res.outcome).toBe('admitted');
    const call = await callbackWith('answer to: build 42 failed, why?');
    expect(call.signed).toBe(true);
    expect(call.body).toMatchObject({ type: 'reply', event_id: 'delivery-1', admission_id: res.admissionId, user: 'ci', conversation: 'pipeline-42' });
    expect(call.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('admits a text up to HERMES_MAX_MESSAGE_CHARS (40 001 characters was a 400 naming a bound of 40 000)', async () => {
    const res = await signedPost({ text: 'y'.repeat(40_001), user: 'ci', conversation: 'long' });
    expect(res.status).toBe(202);
    expect(((await res.json()) as { outcome: string }).outcome).toBe('admitted');
  });

  it('takes a retry (same Idempotency-Key, new timestamp) and an exact replay inside the window as duplicates', async () => {
    const first = await accepted(await signedPost({ text: 'deploy done', user: 'ci' }, { 'idempotency-key': 'delivery-2' }));
    const retry = await accepted(await signedPost({ text: 'deploy done', user: 'ci' }, { 'idempotency-key': 'delivery-2' }, 'demo', Math.floor(Date.now() / 1000) - 5));
    expect(retry).toEqual({ outcome: 'duplicate', admissionId: first.admissionId });
    // No idempotency key: the very same signed request replayed is one admission.
    const raw = JSON.stringify({ text: 'replayed', user: 'ci' });
    const headers = webhookSignedHeaders(SECRET, raw);
    const a = await accepted(await post(raw, headers));
    const b = await accepted(await post(raw, headers));
    expect(b).toEqual({ outcome: 'duplicate', admissionId: a.admissionId });
    // Re-cased, the signature still verifies (hex in any case): it is still the same request.
    const recased = { ...headers, 'x-hermes-signature': headers['x-hermes-signature']!.toUpperCase() };
    expect(await accepted(await post(raw, recased))).toEqual({ outcome: 'duplicate', admissionId: a.admissionId });
    await callbackWith('answer to: replayed');
    await callbackWith('answer to: deploy done');
    expect(model.requests.filter((r) => lastUser(r.body) === 'replayed')).toHaveLength(1);
    expect(receiver.calls.filter((c) => c.body.text === 'answer to: deploy done')).toHaveLength(1);
  });

  it('admits a captured signed request once, whatever Idempotency-Key a replay adds or changes (the header is not signed)', async () => {
    const raw = JSON.stringify({ text: 'rotate the keys', user: 'ci' });
    const signed = webhookSignedHeaders(SECRET, raw);
    const first = await accepted(await post(raw, { ...signed, 'idempotency-key': 'rotate-1' }));
    const replays = await Promise.all(['evil-1', 'evil-2', 'evil-3'].map(async (k) => accepted(await post(raw, { ...signed, 'idempotency-key': k }))));
    const bare = await accepted(await post(raw, signed));
    for (const r of [...replays, bare]) expect(r).toEqual({ outcome: 'duplicate', admissionId: first.admissionId });
    // And the other way: a request without a key, replayed with one.
    const raw2 = JSON.stringify({ text: 'rotate again', user: 'ci' });
    const signed2 = webhookSignedHeaders(SECRET, raw2);
    const unkeyed = await accepted(await post(raw2, signed2));
    expect(await accepted(await post(raw2, { ...signed2, 'idempotency-key': 'evil-4' }))).toEqual({ outcome: 'duplicate', admissionId: unkeyed.admissionId });
    await callbackWith('answer to: rotate the keys');
    await callbackWith('answer to: rotate again');
    expect(model.requests.filter((r) => lastUser(r.body) === 'rotate the keys')).toHaveLength(1);
    expect(model.requests.filter((r) => lastUser(r.body) === 'rotate again')).toHaveLength(1);
  });

  it('offers only the restricted toolset in webhook turns, while the same agent\'s API turns get all of its toolsets', async () => {
    await accepted(await signedPost({ text: 'which tools?', user: 'ci' }));
    await callbackWith('answer to: which tools?');
    expect(toolsSeen('which tools?')).toEqual(['get_time']);
    await runTurn(rt, { agentId: demoId, sessionKey: 'agent:default/demo:api:dm:k', content: 'api tools?' });
    expect(toolsSeen('api tools?')).toEqual(expect.arrayContaining(['get_time', 'memory', 'session_search', 'todo']));
    // A platform entry that widens the set.
    const wide = await accepted(await signedPost({ text: 'wider tools?', user: 'ci' }, {}, 'wide'));
    await deliveredObligation(rt.db.pool, wide.admissionId, 'delivered');
    expect(toolsSeen('wider tools?')).toEqual(['get_time', 'todo']);
  });

  it('without a callbackUrl stores the reply, read with a GET signed over its path; the allowlist names the users accepted', async () => {
    const res = await accepted(await signedPost({ text: 'stored question', user: 'ci' }, {}, 'stored'));
    const path = `/hooks/webhook/default/stored/admissions/${res.admissionId}`;
    const read = async (headers: Record<string, string>) => fetch(`${gw.url}${path}`, { headers });
    const view = await eventually(async () => {
      const r = await read(webhookSignedHeaders(SECRET, path));
      const v = (await r.json()) as { reply: { content: string; delivery: { state: string } } | null };
      return v.reply?.delivery.state === 'delivered' ? v : undefined;
    }, 'the stored reply');
    expect(view.reply!.content).toBe('answer to: stored question');
    expect((await read(webhookSignedHeaders(SECRET, `${path}x`))).status).toBe(401);
    expect((await read(webhookSignedHeaders('not-the-secret', path))).status).toBe(401);

    const stranger = await accepted(await signedPost({ text: 'let me in', user: 'mallory' }, {}, 'stored'));
    expect(stranger.outcome).toBe('refused');
    expect(model.requests.some((r) => lastUser(r.body) === 'let me in')).toBe(false);
  });

  it('answers a request superseded by the same user\'s next one (busy policy interrupt) with a notice, not silence', async () => {
    const first = await accepted(await signedPost({ text: 'hold this one', user: 'ci', conversation: 'busy-1' }, {}, 'interrupted'));
    await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'hold this one'), 'the first turn running');
    const next = await accepted(await signedPost({ text: 'this one instead', user: 'ci', conversation: 'busy-1' }, {}, 'interrupted'));
    const notice = await eventually(() => receiver.calls.find((c) => c.body.admission_id === first.admissionId && c.status === 204), 'the first request\'s callback');
    expect(String(notice.body.text)).toMatch(/interrupted by your next message/i);
    expect(notice.signed).toBe(true);
    const answer = await callbackWith('answer to: this one instead');
    expect(answer.body.admission_id).toBe(next.admissionId);
    expect(receiver.calls.filter((c) => c.body.admission_id === first.admissionId)).toHaveLength(1);
  });

  it('answers a request the running turn took as a steer (busy policy steer) with a notice; the running turn\'s reply answers both', async () => {
    const first = await accepted(await signedPost({ text: 'use the tool', user: 'ci', conversation: 'steer-1' }, {}, 'steered'));
    await toolRunning;
    const steer = await accepted(await signedPost({ text: 'make it blue', user: 'ci', conversation: 'steer-1' }, {}, 'steered'));
    await eventually(async () => {
      const { rows } = await rt.db.pool.query(`SELECT 1 FROM session_signals WHERE admission_id = $1 AND consumed_by = $2`, [steer.admissionId, first.admissionId]);
      return rows.length ? true : undefined;
    }, 'the steer taken by the running turn');
    releaseTool();
    const answer = await callbackWith('saw: use the tool | make it blue');
    expect(answer.body.admission_id).toBe(first.admissionId);
    const notice = await eventually(() => receiver.calls.find((c) => c.body.admission_id === steer.admissionId && c.status === 204), 'the steer request\'s callback');
    expect(notice.body.text).toBe('Passed to the turn that was running: its reply answers this message too.');
    expect(notice.signed).toBe(true);
    expect(model.requests.filter((r) => lastUser(r.body) === 'make it blue')).toHaveLength(1); // the running turn's call, no turn of its own
  });

  it('honours a callback 429 with Retry-After without spending an attempt', async () => {
    receiver.rateLimitNext(1, 1);
    const res = await accepted(await signedPost({ text: 'slow receiver', user: 'ci' }));
    await callbackWith('answer to: slow receiver');
    const ob = await deliveredObligation(rt.db.pool, res.admissionId, 'delivered');
    expect(ob.attempts).toBe(1);
    expect(receiver.calls.filter((c) => c.body.text === 'answer to: slow receiver').map((c) => c.status)).toEqual([429, 204]);
  });
});
