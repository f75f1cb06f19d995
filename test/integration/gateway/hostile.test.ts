// The gateway under hostile input: names that do not exist cost no memory, refusals do not tell
// which agents exist, keys are isolation boundaries (no key reaches another key's session, user
// row or admissions), and text Postgres cannot store is a 400 naming the field, never a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { publishRevision, sha256 } from '../../../services/core/index.js';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { eventually } from '../../support/services.js';
import { admissionWithContent, auth, compiledAgent, openHarness, runFakeTurn, testKey, type Harness } from './harness.js';

let h: Harness;
let gw: RunningGateway;
beforeAll(async () => {
  h = await openHarness();
  await publishRevision(h.db, compiledAgent('shared', ['key-one', 'key-two']));
  await publishRevision(h.db, { ...compiledAgent('closed', ['closed-key']), api: { enabled: false, keySha256: [sha256('closed-key')] } });
  gw = await startGateway(h.deps);
});
afterAll(async () => {
  await gw?.close();
  await h?.close();
});

const json = { 'content-type': 'application/json' };
const postMessage = (agent: string, payload: unknown, headers: Record<string, string>) =>
  h.app.inject({ method: 'POST', url: `/v1/agents/${agent}/messages`, headers: { ...json, ...headers }, payload: JSON.stringify(payload) });
const chat = (payload: unknown, headers: Record<string, string>) =>
  h.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...json, ...headers }, payload: JSON.stringify(payload) });
const randomName = () => randomBytes(12).toString('hex');

describe('names that do not exist (H3)', () => {
  it('keeps the agent cache bounded by the real agents, whatever names are sent with whatever key', async () => {
    const statuses = new Set<number>();
    for (let i = 0; i < 1_500; i++) {
      const key = ['anything', testKey, 'other-key'][i % 3]!;
      statuses.add((await postMessage(`${randomName()}/${randomName()}`, { content: 'x' }, auth(key))).statusCode);
      statuses.add((await chat({ model: `${randomName()}/${randomName()}`, messages: [{ role: 'user', content: 'x' }] }, auth(key))).statusCode);
    }
    expect([...statuses].sort()).toEqual([401, 404]);
    const size = h.agents.size;
    expect(size.names).toBe(0); // no name was looked up: no key was one of those agents'
    expect(size.keys).toBeLessThanOrEqual(5); // the real keys of the real agents
  });

  it('serves an agent created after a request for it was refused', async () => {
    const name = `late-${randomName()}`;
    expect((await postMessage(`default/${name}`, { content: 'too early' }, auth())).statusCode).toBe(404);
    await publishRevision(h.db, compiledAgent(name));
    await eventually(async () => (await postMessage(`default/${name}`, { content: 'now' }, auth())).statusCode === 202, 'the new agent served');
  });
});

describe('refusals do not reveal which agents exist (L3)', () => {
  // demo exists (another key), closed exists with the API platform disabled, nobody does not exist.
  const agents = ['default/demo', 'default/closed', 'default/nobody'];
  const uuid = '00000000-0000-4000-8000-000000000000';
  const same = (bodies: string[], names: string[]) => new Set(bodies.map((b, i) => b.replaceAll(names[i]!, '<agent>'))).size;

  it.each([
    ['a key no agent accepts', 'not-a-key', 401],
    ['a key of another agent', 'other-key', 404],
    ['the disabled agent’s own key', 'closed-key', 401],
  ])('answers %s the same for an existing, a disabled and a missing agent', async (_what, key, status) => {
    const routes = [
      (agent: string) => postMessage(agent, { content: 'x' }, auth(key)),
      (agent: string) => h.app.inject({ method: 'GET', url: `/v1/agents/${agent}/admissions/${uuid}`, headers: auth(key) }),
      (agent: string) => h.app.inject({ method: 'GET', url: `/v1/agents/${agent}/admissions/${uuid}/events`, headers: auth(key) }),
      (agent: string) => chat({ model: agent, messages: [{ role: 'user', content: 'x' }] }, auth(key)),
    ];
    for (const route of routes) {
      const answers = await Promise.all(agents.map(route));
      expect(answers.map((a) => a.statusCode)).toEqual([status, status, status]);
      expect(same(answers.map((a) => a.body), agents)).toBe(1);
      for (const a of answers) {
        expect(a.body).not.toMatch(/disabled/i);
        expect(a.body).not.toContain(sha256(key).slice(0, 12));
      }
    }
  });

  it('keeps OpenAI shapes on the OpenAI routes', async () => {
    const unknownModel = await chat({ model: 'default/nobody', messages: [{ role: 'user', content: 'x' }] }, auth('other-key'));
    expect(unknownModel.statusCode).toBe(404);
    expect(unknownModel.json()).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', code: 'model_not_found', param: null } });
    const badKey = await h.app.inject({ method: 'GET', url: '/v1/models', headers: auth('not-a-key') });
    expect(badKey.statusCode).toBe(401);
    expect(badKey.json().error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
  });
});

describe('keys are isolation boundaries (M1)', () => {
  const keyOne = sha256('key-one').slice(0, 12);
  const sessionAndUser = async (admissionId: string) =>
    (await h.db.pool.query<{ session_id: string; user_id: string }>('SELECT session_id, user_id FROM admissions WHERE id = $1', [admissionId])).rows[0]!;

  it('no user id or conversation chosen by one key lands on another key’s default session or user', async () => {
    const own = await postMessage('default/shared', { content: 'my secret is banana' }, auth('key-one'));
    expect(own.statusCode).toBe(202);
    const victim = await sessionAndUser(own.json().admissionId);
    // The OpenAI route: `user` and X-Hermes-Session-Id chosen to match the victim's default.
    const content = 'forged through chat completions';
    // A key that speaks only for itself may not name a user at all (403, nothing admitted)…
    const named = await chat({ model: 'default/shared', user: 'k', messages: [{ role: 'user', content }] }, { ...auth('key-two'), 'x-hermes-session-id': keyOne });
    expect(named.statusCode).toBe(403);
    // …and a session id chosen to match the victim's is only a conversation under its own identity.
    const pending = chat({ model: 'default/shared', messages: [{ role: 'user', content }] }, { ...auth('key-two'), 'x-hermes-session-id': keyOne });
    const forgedId = await admissionWithContent(h, content);
    expect((await sessionAndUser(forgedId)).session_id).not.toBe(victim.session_id);
    await runFakeTurn(h, forgedId, { result: { outcome: 'completed', reply: 'ok' } });
    expect((await pending).statusCode).toBe(200);
    const forgeries = [
      { user: { id: 'key' }, conversation: keyOne },
      { user: { id: 'k' }, conversation: keyOne },
      { user: { id: `key:${keyOne}` } },
      { user: { id: `k:${keyOne}` } },
      { user: { id: keyOne } },
      { conversation: keyOne },
      { user: { id: 'u' }, conversation: keyOne },
    ];
    for (const forged of forgeries) {
      const res = await postMessage('default/shared', { content: `forged ${JSON.stringify(forged)}`, ...forged }, auth('key-two'));
      if ('user' in forged) {
        expect(res.statusCode, JSON.stringify(forged)).toBe(403);
        continue;
      }
      expect(res.statusCode).toBe(202);
      const got = await sessionAndUser(res.json().admissionId);
      expect(got.session_id, JSON.stringify(forged)).not.toBe(victim.session_id);
      expect(got.user_id, JSON.stringify(forged)).not.toBe(victim.user_id);
    }
  });

  it('one key cannot read another key’s admissions of the same agent', async () => {
    const { admissionId, links } = (await postMessage('default/shared', { content: 'only mine', conversation: 'private' }, auth('key-one'))).json();
    expect((await h.app.inject({ method: 'GET', url: links.self, headers: auth('key-one') })).statusCode).toBe(200);
    const read = await h.app.inject({ method: 'GET', url: links.self, headers: auth('key-two') });
    expect(read.statusCode).toBe(404);
    expect(read.json().error.code).toBe('HERMES_ADMISSION_NOT_FOUND');
    const events = await fetch(`${gw.url}${links.events}`, { headers: auth('key-two') });
    expect(events.status).toBe(404);
    expect(((await events.json()) as { error: { code: string } }).error.code).toBe('HERMES_ADMISSION_NOT_FOUND');
    await runFakeTurn(h, admissionId, { result: { outcome: 'completed', reply: 'done' } });
  });
});

describe('text Postgres cannot store (M2, gateway side)', () => {
  const nul = 'a\u0000b';
  const lone = 'a\ud800b';
  const cases: [string, () => ReturnType<typeof postMessage>, string][] = [
    ['NUL in content', () => postMessage('default/demo', { content: nul }, auth()), 'body.content'],
    ['a lone surrogate in content', () => postMessage('default/demo', { content: lone }, auth()), 'body.content'],
    ['NUL in user.name', () => postMessage('default/demo', { content: 'x', user: { id: 'u1', name: nul } }, auth()), 'body.user.name'],
    ['a newline in user.name', () => postMessage('default/demo', { content: 'x', user: { id: 'u1', name: 'a\nb' } }, auth()), 'body.user.name'],
    ['NUL in user.id', () => postMessage('default/demo', { content: 'x', user: { id: nul } }, auth()), 'body.user.id'],
    ['NUL in conversation', () => postMessage('default/demo', { content: 'x', conversation: nul }, auth()), 'body.conversation'],
    ['NUL in the namespace, with a bogus key', () => h.app.inject({ method: 'GET', url: '/v1/agents/%00/x/admissions/00000000-0000-4000-8000-000000000000', headers: auth('bogus') }), 'params.namespace'],
    ['a control character in the name, with a bogus key', () => postMessage('default/de%01mo', { content: 'x' }, auth('bogus')), 'params.name'],
    ['NUL in the admission id', () => h.app.inject({ method: 'GET', url: '/v1/agents/default/demo/admissions/%00', headers: auth() }), 'params.id'],
    ['NUL in the model, with a bogus key', () => chat({ model: 'x\u0000/y', messages: [{ role: 'user', content: 'x' }] }, auth('bogus')), 'body.model'],
    ['NUL in the OpenAI user', () => chat({ model: 'demo', user: nul, messages: [{ role: 'user', content: 'x' }] }, auth()), 'body.user'],
    ['NUL in a system message', () => chat({ model: 'demo', messages: [{ role: 'system', content: nul }, { role: 'user', content: 'x' }] }, auth()), 'body.messages.0.content'],
    ['NUL in a history text part', () => chat({ model: 'demo', messages: [{ role: 'assistant', content: [{ type: 'text', text: nul }] }, { role: 'user', content: 'x' }] }, auth()), 'body.messages.0.content'],
    ['a lone surrogate in the last message', () => chat({ model: 'demo', messages: [{ role: 'user', content: lone }] }, auth()), 'body.messages.0.content'],
  ];
  it.each(cases)('answers %s with a 400 naming the field', async (_what, send, field) => {
    const before = (await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM admissions')).rows[0]!.n;
    const res = await send();
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain(field);
    expect((await h.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM admissions')).rows[0]!.n).toBe(before);
  });
});

describe('requests Node\'s HTTP parser refuses', () => {
  /** Sends raw bytes to the listening gateway; resolves with all it answered before closing. */
  const rawHttp = (request: string) => new Promise<string>((resolve, reject) => {
    const { port, hostname } = new URL(gw.url);
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let answer = '';
    socket.on('data', (c: Buffer) => { answer += c.toString(); });
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
  const parse = (answer: string) => {
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    return { status: Number(head.split(' ')[1]), contentType: /content-type: ([^\r]+)/i.exec(head)?.[1], body: JSON.parse(body) as unknown };
  };

  it('answers them in the gateway\'s error shape, not fastify\'s', async () => {
    // It used to be {"error":"Request Header Fields Too Large","message":"Exceeded maximum allowed HTTP header size","statusCode":431}.
    const big = parse(await rawHttp(`GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(big).toEqual({ status: 431, contentType: 'application/json; charset=utf-8', body: { error: { code: 'HERMES_HEADERS_TOO_LARGE', message: expect.stringContaining('16 KiB') } } });
    const malformed = parse(await rawHttp('GET /v1/models HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n'));
    expect(malformed).toEqual({ status: 400, contentType: 'application/json; charset=utf-8', body: { error: { code: 'HERMES_BAD_HTTP', message: expect.any(String) } } });
  });
});
