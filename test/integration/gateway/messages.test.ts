// POST /v1/agents/:ns/:name/messages and GET …/admissions/:id against real Postgres and Redis:
// the admission is durable before the answer, dedupe holds, every refusal is coded JSON.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trace } from '@opentelemetry/api';
import { AgentCache, getAdmission, initTracing, openDb, publishRevision, sha256 } from '../../../services/core/index.js';
import { buildGatewayApp } from '../../../services/gateway/index.js';
import { auth, compiledAgent, openHarness, runFakeTurn, testKey, type Harness } from './harness.js';

let h: Harness;
const path = '/v1/agents/default/demo/messages';
const keyUser = `k:${sha256(testKey).slice(0, 12)}`;

beforeAll(async () => {
  initTracing('gateway-test', {});
  h = await openHarness({ HERMES_MAX_BODY_BYTES: 4096 });
  // The same key as a trusted backend of another agent: it may name users.
  const backend = compiledAgent('backend');
  await publishRevision(h.db, { ...backend, api: { ...backend.api, keys: [{ sha256: sha256(testKey), trustedBackend: true }] } });
});
afterAll(async () => {
  await h?.close();
});

const post = (payload: unknown, headers: Record<string, string> = auth()) =>
  h.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json', ...headers }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });

const countAdmissions = async () => Number((await h.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM admissions')).rows[0]!.n);

describe('POST messages', () => {
  it('commits the admission, enqueues a job with its id and answers 202 with links', async () => {
    const res = await post({ content: 'hello' });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({ state: 'queued', duplicate: false });
    expect(body.links).toEqual({ self: `/v1/agents/default/demo/admissions/${body.admissionId}`, events: `/v1/agents/default/demo/admissions/${body.admissionId}/events` });
    const admission = await getAdmission(h.db.pool, body.admissionId);
    expect(admission).toMatchObject({ agentId: h.agentId, sessionId: body.sessionId, platform: 'api', state: 'queued', content: 'hello', replyTarget: { kind: 'api' } });
    const session = await h.db.pool.query('SELECT session_key FROM sessions WHERE id = $1', [body.sessionId]);
    expect(session.rows[0].session_key).toBe(`agent:default/demo:api:dm:${keyUser}`);
    const job = await h.queues.turns.getJob(body.admissionId);
    expect(job?.data.admissionId).toBe(body.admissionId);
  });

  it('keys the session by user and conversation, and escapes ":" in caller-chosen parts (a trusted backend names the user)', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/v1/agents/default/backend/messages', headers: { 'content-type': 'application/json', ...auth() }, payload: JSON.stringify({ content: 'hi', user: { id: 'u:1', name: 'Ada' }, conversation: 'trip' }) });
    expect(res.statusCode).toBe(202);
    const session = await h.db.pool.query('SELECT session_key FROM sessions WHERE id = $1', [res.json().sessionId]);
    expect(session.rows[0].session_key).toBe('agent:default/backend:api:dm:u%3A1:trip');
  });

  it('refuses (403, nothing admitted) a user named with a key that speaks only for itself', async () => {
    const before = await countAdmissions();
    const res = await post({ content: 'hi', user: { id: 'someone' } });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('HERMES_USER_NOT_ALLOWED');
    expect(await countAdmissions()).toBe(before);
  });

  it('treats a repeated eventId or Idempotency-Key as the same admission', async () => {
    const before = await countAdmissions();
    const first = await post({ content: 'once', eventId: 'evt-1' });
    const again = await post({ content: 'once', eventId: 'evt-1' });
    const viaHeader = await post({ content: 'once' }, { ...auth(), 'idempotency-key': 'evt-1' });
    expect(first.statusCode).toBe(202);
    expect(again.statusCode).toBe(200);
    expect(viaHeader.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ admissionId: first.json().admissionId, duplicate: true });
    expect(viaHeader.json().admissionId).toBe(first.json().admissionId);
    expect(await countAdmissions()).toBe(before + 1);
  });

  it('refuses an eventId that disagrees with the Idempotency-Key header', async () => {
    const res = await post({ content: 'x', eventId: 'a' }, { ...auth(), 'idempotency-key': 'b' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('HERMES_BAD_REQUEST');
  });

  it('carries the caller trace into the admission', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await post({ content: 'traced' }, { ...auth(), traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    const admission = await getAdmission(h.db.pool, res.json().admissionId);
    expect(admission?.traceContext?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(admission?.traceContext?.traceparent).not.toContain('00f067aa0ba902b7'); // the gateway's own span is the parent
    expect(trace.getActiveSpan()).toBeUndefined();
  });
});

describe('refusals', () => {
  const cases: [string, () => ReturnType<typeof post>, number, string][] = [
    ['malformed JSON', () => post('{"content": "x"'), 400, 'HERMES_BAD_JSON'],
    ['an empty JSON body', () => post(''), 400, 'HERMES_BAD_JSON'],
    ['no Authorization header', () => post({ content: 'x' }, {}), 401, 'HERMES_UNAUTHENTICATED'],
    ['a malformed Authorization header', () => post({ content: 'x' }, { authorization: 'Basic dXNlcg==' }), 401, 'HERMES_UNAUTHENTICATED'],
    ['a key of another agent (the same answer as an unknown agent)', () => post({ content: 'x' }, auth('other-key')), 404, 'HERMES_AGENT_NOT_FOUND'],
    ['a key no agent accepts', () => post({ content: 'x' }, auth('no-such-key')), 401, 'HERMES_UNAUTHENTICATED'],
    ['an unknown agent', () => h.app.inject({ method: 'POST', url: '/v1/agents/default/nobody/messages', headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"content":"x"}' }), 404, 'HERMES_AGENT_NOT_FOUND'],
    ['a body over HERMES_MAX_BODY_BYTES', () => post({ content: 'x'.repeat(5000) }), 413, 'HERMES_PAYLOAD_TOO_LARGE'],
    ['a non-JSON content type', () => h.app.inject({ method: 'POST', url: path, headers: { ...auth(), 'content-type': 'text/plain' }, payload: 'hello' }), 415, 'HERMES_UNSUPPORTED_MEDIA_TYPE'],
    ['a compressed body (it used to be "not valid JSON")', () => h.app.inject({ method: 'POST', url: path, headers: { ...auth(), 'content-type': 'application/json', 'content-encoding': 'gzip' }, payload: gzipSync('{"content":"x"}') }), 415, 'HERMES_UNSUPPORTED_MEDIA_TYPE'],
    ['an empty content', () => post({ content: '' }), 400, 'HERMES_BAD_REQUEST'],
    ['a wrongly typed field', () => post({ content: 'x', user: { id: 7 } }), 400, 'HERMES_BAD_REQUEST'],
    ['an unknown route', () => h.app.inject({ method: 'GET', url: '/v1/nothing' }), 404, 'HERMES_ROUTE_NOT_FOUND'],
    ['a route asked with a method it does not take', () => h.app.inject({ method: 'GET', url: path, headers: auth() }), 405, 'HERMES_METHOD_NOT_ALLOWED'],
  ];
  it.each(cases)('answers %s with a coded JSON error', async (_what, send, status, code) => {
    const before = await countAdmissions();
    const res = await send();
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json().error).toMatchObject({ code, message: expect.any(String) });
    expect(await countAdmissions()).toBe(before);
  });

  it('answers a known path asked with another method 405 with Allow, not "no such route"', async () => {
    // GET /v1/chat/completions used to be a 404 'GET /v1/chat/completions is not a route of the Hermes gateway.'
    const get = await h.app.inject({ method: 'GET', url: '/v1/chat/completions', headers: auth() });
    expect([get.statusCode, get.headers.allow, get.json().error]).toEqual([405, 'POST, OPTIONS', expect.objectContaining({ code: 'HERMES_METHOD_NOT_ALLOWED', type: 'invalid_request_error', message: expect.stringContaining('/v1/chat/completions takes POST, not GET') })]);
    const put = await h.app.inject({ method: 'PUT', url: '/v1/responses/resp_x', headers: auth() });
    expect([put.statusCode, put.headers.allow]).toEqual([405, 'DELETE, GET, HEAD, OPTIONS']);
    const options = await h.app.inject({ method: 'OPTIONS', url: '/v1/runs/run_x/stop' });
    expect([options.statusCode, options.headers.allow, options.body]).toEqual([204, 'POST, OPTIONS', '']);
    expect((await h.app.inject({ method: 'DELETE', url: '/v1/nothing/here' })).statusCode).toBe(404);
  });

  it('names the offending field of a schema error', async () => {
    const res = await post({ content: 'x', user: { id: 7 } });
    expect(res.json().error.issues).toEqual([expect.objectContaining({ path: 'body.user.id' })]);
    expect(res.json().error.message).toContain('body.user.id');
  });
});

describe('Postgres unavailable', () => {
  it('answers 503 and never 202, whether the agent lookup or the admission fails', async () => {
    const dead = openDb('postgresql://postgres@127.0.0.1:1/x');
    const deadAgents = new AgentCache(dead, 'postgresql://postgres@127.0.0.1:1/x');
    const lookupFails = buildGatewayApp({ ...h.deps, db: dead, agents: deadAgents });
    const admitFails = buildGatewayApp({ ...h.deps, db: dead }); // the agent cache still reads the live database
    try {
      for (const app of [lookupFails, admitFails]) {
        const res = await app.inject({ method: 'POST', url: path, headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"content":"lost?"}' });
        expect(res.statusCode).toBe(503);
        expect(res.json().error.code).toBe('HERMES_STORE_UNAVAILABLE');
      }
    } finally {
      await lookupFails.close();
      await admitFails.close();
      await deadAgents.close();
      await dead.close();
    }
  });
});

describe('GET admission', () => {
  it('shows state, then the reply and its delivery once the turn finished', async () => {
    const { admissionId } = (await post({ content: 'status?', conversation: 'status' })).json();
    const url = `/v1/agents/default/demo/admissions/${admissionId}`;
    const queued = await h.app.inject({ method: 'GET', url, headers: auth() });
    expect(queued.statusCode).toBe(200);
    expect(queued.json()).toMatchObject({ id: admissionId, state: 'queued', outcome: null, reply: null, startedAt: null });
    await runFakeTurn(h, admissionId, { result: { outcome: 'completed', reply: 'all good' } });
    // An api reply is the caller's to read: delivered in the transaction that stored it.
    const done = await h.app.inject({ method: 'GET', url, headers: auth() });
    expect(done.json()).toMatchObject({ state: 'terminal', outcome: 'completed', reply: { content: 'all good', delivery: { state: 'delivered', attempts: 0 } } });
  });

  it('names the admission that resumes a cut turn, where its reply is', async () => {
    const { admissionId } = (await post({ content: 'cut me', conversation: 'cut' })).json();
    await runFakeTurn(h, admissionId, { cutThenResume: { result: { outcome: 'completed', reply: 'resumed and done' }, unfollowed: true } });
    const cut = (await h.app.inject({ method: 'GET', url: `/v1/agents/default/demo/admissions/${admissionId}`, headers: auth() })).json();
    expect(cut).toMatchObject({ state: 'terminal', outcome: 'interrupted', reply: null, continuedBy: expect.any(String) });
    const resumed = await h.app.inject({ method: 'GET', url: `/v1/agents/default/demo/admissions/${cut.continuedBy}`, headers: auth() });
    expect(resumed.json()).toMatchObject({ state: 'terminal', outcome: 'completed', continuedBy: null, reply: { content: 'resumed and done' } });
  });

  it('answers 404 for an admission of another agent, or a malformed id', async () => {
    const { admissionId } = (await post({ content: 'mine' })).json();
    const other = await h.app.inject({ method: 'GET', url: `/v1/agents/default/other/admissions/${admissionId}`, headers: auth('other-key') });
    expect(other.statusCode).toBe(404);
    expect(other.json().error.code).toBe('HERMES_ADMISSION_NOT_FOUND');
    const malformed = await h.app.inject({ method: 'GET', url: '/v1/agents/default/demo/admissions/not-a-uuid', headers: auth() });
    expect(malformed.statusCode).toBe(404);
  });
});
