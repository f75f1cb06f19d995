// The API's stored ids as a client and a trusted backend use them, against a listening gateway and
// a real worker: continuing or stopping another key's response or run acts in that turn's own
// session; each route's dedupe ids live apart (a message's eventId never names a response, a run's
// stop or a chat completion); Idempotency-Key replays survive what they continued and never serve
// a deleted response; a retried chat completion keeps its session id; bodies and paths a client
// may send get our 400 (nesting, malformed percent-encoding, repeated headers, NUL in metadata)
// instead of a 500 or the router's own shape; a missing admission and another key's look alike.
import { request } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../../services/core/index.js';
import type { ChatRequestBody } from '../../support/fake-openai.js';
import { eventually } from '../../support/services.js';
import { sseFrames } from '../../support/sse.js';
import { createTestAgent, testApiKey, useGatewaySystem } from '../../support/system.js';

const OWNER = testApiKey;
const BACKEND = 'backend-key-0123456789';
const OTHER = 'other-key-0123456789';

/** Model calls whose user line contains a gate's name wait until the gate opens. */
const gates = new Map<string, Promise<void>>();
function gate(name: string): () => void {
  let open!: () => void;
  gates.set(name, new Promise<void>((resolve) => { open = resolve; }));
  return open;
}

/** The model echoes the turn's last user line and how many user lines it was shown. */
const sys = useGatewaySystem((b: ChatRequestBody) => {
  const users = b.messages.filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
  const text = users.at(-1) ?? '';
  const held = [...gates].find(([name]) => text.includes(name))?.[1];
  return { text: `echo: ${text} (${users.length} user lines: ${users.join(' | ')})`, ...(held ? { hold: held } : {}) };
});

beforeAll(async () => {
  await createTestAgent(sys.rt, sys.model.baseURL, {
    api: { enabled: true, keySha256: [sha256(OWNER), sha256(BACKEND), sha256(OTHER)], keys: [{ sha256: sha256(BACKEND), trustedBackend: true }] },
  });
});

const api = (path: string, init: { method?: string; body?: unknown; key?: string; headers?: Record<string, string> } = {}) =>
  fetch(`${sys.gateway.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { authorization: `Bearer ${init.key ?? OWNER}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) } : {}),
  });
const json = async <T = Record<string, unknown>>(res: Response | Promise<Response>) => (await (await res).json()) as T;
type Resp = { id: string; status: string; output_text?: string; output: { content: { text: string }[] }[] };
const textOf = (r: Resp) => r.output.flatMap((o) => o.content.map((c) => c.text)).join('');
const respond = (body: Record<string, unknown>, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  api('/v1/responses', { body: { model: 'default/demo', ...body }, ...opts });
const runStatus = (id: string, key = OWNER) => json<{ status: string }>(api(`/v1/runs/${id}`, { key }));
const sessionOf = async (admissionId: string) => (await sys.rt.db.pool.query<{ session_id: string }>('SELECT session_id FROM admissions WHERE id = $1', [admissionId])).rows[0]!.session_id;
const admissionOf = async (turnId: string) => (await sys.rt.db.pool.query<{ admission_id: string }>('SELECT admission_id FROM api_turns WHERE id = $1', [turnId])).rows[0]!.admission_id;

describe('a trusted backend acting on another key\'s ids', () => {
  it('continues a response in its own session, with its history', async () => {
    const first = await json<Resp>(respond({ input: 'my name is Ada' }));
    const next = await respond({ input: 'what is my name?', previous_response_id: first.id }, { key: BACKEND });
    expect(next.status).toBe(200);
    const answer = await json<Resp>(next);
    expect(textOf(answer)).toBe('echo: what is my name? (2 user lines: my name is Ada | what is my name?)');
    expect(await sessionOf(await admissionOf(answer.id))).toBe(await sessionOf(await admissionOf(first.id)));
    // The owner continues the backend's continuation in the same session too.
    const third = await json<Resp>(respond({ input: 'and again?', previous_response_id: answer.id }));
    expect(textOf(third)).toContain('(3 user lines:');
  });

  it('stops a run in its own session', async () => {
    const release = gate('held run');
    try {
      const started = await json<{ run_id: string }>(api('/v1/runs', { body: { model: 'default/demo', input: 'held run please' } }));
      await eventually(async () => (await runStatus(started.run_id)).status === 'running', 'the run to start');
      const stop = await json<{ status: string }>(api(`/v1/runs/${started.run_id}/stop`, { method: 'POST', key: BACKEND }));
      expect(stop.status).toBe('stopping');
      await eventually(async () => (await runStatus(started.run_id)).status === 'cancelled', 'the backend\'s stop to cancel the run');
    } finally {
      release();
    }
  });
});

describe('dedupe ids of one key, route by route', () => {
  const message = (eventId: string, content: string) => api('/v1/agents/default/demo/messages', { body: { content, eventId } });

  it('a message\'s eventId names no response, chat completion or run stop', async () => {
    expect((await message('responses:collide-1', 'message text one')).status).toBe(202);
    const fresh = await respond({ input: 'a different question' }, { headers: { 'idempotency-key': 'collide-1' } });
    expect(fresh.headers.get('idempotency-replayed')).toBeNull();
    expect(textOf(await json<Resp>(fresh))).toMatch(/^echo: a different question/);

    expect((await message('shared-1', 'message text two')).status).toBe(202);
    const chat = await json<{ choices: { message: { content: string } }[] }>(api('/v1/chat/completions', {
      body: { model: 'default/demo', messages: [{ role: 'user', content: 'a chat question' }] }, headers: { 'idempotency-key': 'shared-1' } }));
    expect(chat.choices[0]!.message.content).toMatch(/^echo: a chat question/);

    const release = gate('held for a stop');
    try {
      const started = await json<{ run_id: string }>(api('/v1/runs', { body: { model: 'default/demo', input: 'held for a stop' } }));
      await eventually(async () => (await runStatus(started.run_id)).status === 'running', 'the run to start');
      expect((await message(`run-stop:${started.run_id}`, 'just a message')).status).toBe(202);
      await api(`/v1/runs/${started.run_id}/stop`, { method: 'POST' });
      await eventually(async () => (await runStatus(started.run_id)).status === 'cancelled', 'the stop to cancel the run');
    } finally {
      release();
    }
  });

  it('a retried chat completion answers with the same session id, which continues that conversation', async () => {
    const ask = (content: string, headers: Record<string, string>) => api('/v1/chat/completions', {
      body: { model: 'default/demo', messages: [{ role: 'user', content }] }, headers });
    const first = await ask('remember 42', { 'idempotency-key': 'chat-retry-1' });
    const retry = await ask('remember 42', { 'idempotency-key': 'chat-retry-1' });
    const session = first.headers.get('x-hermes-session-id');
    expect(session).toMatch(/^chat-/);
    expect(retry.headers.get('x-hermes-session-id')).toBe(session);
    expect(retry.headers.get('x-hermes-admission-id')).toBe(first.headers.get('x-hermes-admission-id'));
    const next = await json<{ choices: { message: { content: string } }[] }>(ask('what did I say?', { 'x-hermes-session-id': session! }));
    expect(next.choices[0]!.message.content).toContain('(2 user lines: remember 42 | what did I say?)');
  });
});

describe('Idempotency-Key replays and deletion', () => {
  it('replays a continuation after what it continued was deleted, and never serves a deleted response', async () => {
    const base = await json<Resp>(respond({ input: 'the base' }));
    const body = { input: 'the follow-up', previous_response_id: base.id };
    const first = await json<Resp>(respond(body, { headers: { 'idempotency-key': 'after-delete-1' } }));
    expect((await api(`/v1/responses/${base.id}`, { method: 'DELETE' })).status).toBe(200);
    const replay = await respond(body, { headers: { 'idempotency-key': 'after-delete-1' } });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    expect((await json<Resp>(replay)).id).toBe(first.id);

    expect((await api(`/v1/responses/${first.id}`, { method: 'DELETE' })).status).toBe(200);
    const gone = await respond(body, { headers: { 'idempotency-key': 'after-delete-1' } });
    expect(gone.status).toBe(404);
    expect(JSON.stringify(await gone.json())).not.toContain('the follow-up');
  });

  it('refuses a run that names a user beside previous_response_id, as a response does', async () => {
    const base = await json<Resp>(respond({ input: 'whose?' }));
    const res = await api('/v1/runs', { body: { input: 'x', previous_response_id: base.id, user: 'bob' }, key: BACKEND });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('body.user');
  });
});

describe('what a client may send', () => {
  it('a body nested past 64 levels is a 400 on the routes that hash it, not a 500', async () => {
    const deep = (n: number) => `{"model":"default/demo","input":"deep","x":${'['.repeat(n)}${']'.repeat(n)}}`;
    for (const path of ['/v1/responses', '/v1/runs']) {
      const res = await api(path, { body: deep(5_000) });
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ error: { message: expect.stringContaining('nested more than 64 levels') } });
    }
  });

  it('a repeated Idempotency-Key or X-Hermes-Session-Id is refused, not joined', async () => {
    // fetch joins repeated headers itself; node:http sends each line as given.
    const send = (headers: Record<string, string | string[]>) => new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${sys.gateway.url}/v1/runs`, { method: 'POST', headers: { authorization: `Bearer ${OWNER}`, 'content-type': 'application/json', ...headers } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => { body += c.toString(); });
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'default/demo', input: 'x' }));
    });
    for (const name of ['idempotency-key', 'x-hermes-session-id']) {
      const res = await send({ [name]: ['a', 'b'] });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ error: { message: expect.stringContaining(`Send the ${name} header once.`) } });
    }
    expect((await sys.rt.db.pool.query(`SELECT 1 FROM api_turns WHERE idempotency_key LIKE 'a,%'`)).rowCount).toBe(0);
  });

  it('a path the router cannot decode or a long id gets our JSON error', async () => {
    const bad = await api('/v1/responses/%ED%A0%80');
    expect(bad.status).toBe(400);
    expect(await json(bad)).toMatchObject({ error: { code: 'HERMES_BAD_REQUEST', message: expect.stringContaining('The request path is not valid percent-encoded UTF-8.') } });
    const long = await api(`/v1/responses/resp_${'a'.repeat(200)}`);
    expect(long.status).toBe(404);
    expect(await json(long)).toMatchObject({ error: { code: 'response_not_found' } });
  });

  it('NUL in metadata is a 400 naming it', async () => {
    const res = await respond({ input: 'x', metadata: { note: 'a\u0000b' } });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('metadata');
  });

  it('an admission id that does not exist and another key\'s get the same 404 on the event stream', async () => {
    const posted = await json<{ admissionId: string }>(api('/v1/agents/default/demo/messages', { body: { content: 'mine' } }));
    const missingId = '00000000-0000-4000-8000-000000000000';
    const events = async (id: string, key: string) => {
      const res = await api(`/v1/agents/default/demo/admissions/${id}/events`, { key });
      return { status: res.status, message: (await json<{ error: { message: string } }>(res)).error.message.replace(id, '<id>') };
    };
    const theirs = await events(posted.admissionId, OTHER);
    expect(theirs.status).toBe(404);
    expect(await events(missingId, OTHER)).toEqual(theirs);
    expect(await events(missingId, OWNER)).toEqual(theirs);
  });

  it('a run\'s status events name only run statuses, and its end is the run.<status> event', async () => {
    // Held until the stream is open, so the follower sees it running, then ending.
    const release = gate('held status events');
    const started = await json<{ run_id: string }>(api('/v1/runs', { body: { model: 'default/demo', input: 'held status events' } }));
    await eventually(async () => (await runStatus(started.run_id)).status === 'running', 'the run to start');
    const res = await api(`/v1/runs/${started.run_id}/events`);
    const events: { event: string; status?: string }[] = [];
    const read = (async () => {
      for await (const { event, data } of sseFrames(res.body!)) {
        if (event && data) events.push({ event, status: (JSON.parse(data) as { status?: string }).status });
      }
    })();
    await eventually(() => events.some((e) => e.event === 'run.status'), 'the running status');
    release();
    await read;
    expect(events.filter((e) => e.event === 'run.status').map((e) => e.status)).toEqual(['running']);
    expect(events.at(-1)?.event).toBe('run.completed');
  });
});
