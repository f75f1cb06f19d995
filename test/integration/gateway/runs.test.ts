// The runs API and GET /v1/sessions against a listening gateway, a real worker and the fake model:
// a run starts at once (202), is polled and followed over SSE (status, deltas, the final event),
// is stopped through the /stop signal path while the model call hangs, replays for the same
// Idempotency-Key and refuses another body with 409; sessions list only the caller's, newest
// first, paged; refusals (413, 400, 404) write nothing.
import { connect } from 'node:net';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { publishRevision, sha256 } from '../../../services/core/index.js';
import { lastUser, type ChatRequestBody } from '../../support/fake-openai.js';
import { eventually } from '../../support/services.js';
import { createTestAgent, testAgent, testApiKey, useGatewaySystem } from '../../support/system.js';
import { sseFrames } from '../../support/sse.js';

const OTHER_KEY = 'second-key-0123456789';

/** Model calls whose user line contains a gate's name wait until the gate opens. */
const gates = new Map<string, { open: () => void; opened: Promise<void> }>();
function gate(name: string) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => { open = resolve; });
  gates.set(name, { open, opened });
  return open;
}

const sys = useGatewaySystem((b: ChatRequestBody) => {
  const text = lastUser(b);
  const held = [...gates].find(([name]) => text.includes(name))?.[1];
  return { text: `echo: ${text}`, chunks: 3, ...(held ? { hold: held.opened } : {}) };
}, { HERMES_MAX_BODY_BYTES: 16_384 });

beforeAll(async () => {
  await createTestAgent(sys.rt, sys.model.baseURL, { api: { enabled: true, keySha256: [sha256(testApiKey), sha256(OTHER_KEY)] } });
  await publishRevision(sys.rt.db, testAgent(sys.model.baseURL, { agent: { namespace: 'default', name: 'second' } }));
});

const api = (path: string, init: { method?: string; body?: unknown; key?: string; headers?: Record<string, string> } = {}) =>
  fetch(`${sys.gateway.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { authorization: `Bearer ${init.key ?? testApiKey}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) } : {}),
  });
const json = async <T = Record<string, unknown>>(res: Response | Promise<Response>) => (await (await res).json()) as T;
const count = async (table: string) => Number((await sys.rt.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
const ledgerCounts = async () => ({ admissions: await count('admissions'), apiTurns: await count('api_turns'), sessions: await count('sessions'), signals: await count('session_signals') });

interface RunEvent { event: string; run_id: string; [k: string]: unknown }

/** Opens a run's event stream; `events` fills as frames arrive, `done` resolves when the stream ends. */
async function follow(runId: string, key = testApiKey) {
  const res = await api(`/v1/runs/${runId}/events`, { key });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events: RunEvent[] = [];
  const done = (async () => {
    for await (const { event, data } of sseFrames(res.body!)) {
      if (event && data) events.push({ ...(JSON.parse(data) as RunEvent), frameEvent: event });
    }
    return events;
  })();
  return { events, done };
}

const startRun = async (body: Record<string, unknown>, opts: { key?: string; headers?: Record<string, string> } = {}) => {
  const res = await api('/v1/runs', { body: { model: 'default/demo', ...body }, ...opts });
  return { status: res.status, headers: res.headers, body: await json<{ run_id: string; status: string; replayed: boolean }>(res) };
};
const finished = (runId: string, key = testApiKey) => eventually(async () => {
  const run = await json<{ status: string; output?: string; error?: string }>(api(`/v1/runs/${runId}`, { key }));
  return ['completed', 'failed', 'cancelled', 'interrupted'].includes(run.status) ? run : undefined;
}, `run ${runId} settled`);

describe('POST /v1/runs and GET /v1/runs/{id}', () => {
  it('starts a run at once and polls it to its output', async () => {
    const open = gate('slow poll');
    const started = await startRun({ input: 'slow poll please' });
    expect(started.status).toBe(202);
    expect(started.body).toEqual({ run_id: expect.stringMatching(/^run_[0-9a-f]{32}$/), status: 'started', replayed: false });
    const running = await json(api(`/v1/runs/${started.body.run_id}`));
    expect(running).toMatchObject({ object: 'hermes.run', run_id: started.body.run_id, model: 'default/demo' });
    expect(['queued', 'running']).toContain(running.status);
    open();
    const run = await finished(started.body.run_id);
    expect(run).toMatchObject({ status: 'completed', output: 'echo: slow poll please', usage: { input_tokens: 10 } });
  });

  it('continues a named session and a previous response', async () => {
    const one = await startRun({ input: 'remember teal', session_id: 'colours' });
    await finished(one.body.run_id);
    const two = await startRun({ input: 'which colour?', session_id: 'colours', instructions: 'Be brief.' });
    await finished(two.body.run_id);
    const req = sys.model.requests.find((r) => r.body.messages.some((m) => m.content === 'which colour?'))!;
    expect(req.body.messages.filter((m) => m.role !== 'system').map((m) => m.content)).toEqual(['remember teal', 'echo: remember teal', 'which colour?']);
    expect(req.body.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n')).toContain('Be brief.');

    const client = new OpenAI({ apiKey: testApiKey, baseURL: `${sys.gateway.url}/v1`, maxRetries: 0 });
    const resp = await client.responses.create({ model: 'default/demo', input: 'response first' });
    const three = await startRun({ input: 'run after response', previous_response_id: resp.id });
    await finished(three.body.run_id);
    const seen = sys.model.requests.find((r) => r.body.messages.some((m) => m.content === 'run after response'))!;
    expect(seen.body.messages.filter((m) => m.role !== 'system').map((m) => m.content)).toEqual(['response first', 'echo: response first', 'run after response']);
  });

  it('replays the same Idempotency-Key and body without a second admission; 409 for another body', async () => {
    const open = gate('idempotent run');
    const before = await ledgerCounts();
    const headers = { 'Idempotency-Key': 'run-key-1' };
    const [a, b] = await Promise.all([startRun({ input: 'idempotent run' }, { headers }), startRun({ input: 'idempotent run' }, { headers })]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(b.body.run_id).toBe(a.body.run_id);
    expect([a.body.replayed, b.body.replayed].sort()).toEqual([false, true]);
    const again = await startRun({ input: 'idempotent run' }, { headers });
    expect(again.body).toMatchObject({ run_id: a.body.run_id, replayed: true });
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    const mid = await ledgerCounts();
    expect(mid.admissions - before.admissions).toBe(1);
    expect(mid.apiTurns - before.apiTurns).toBe(1);

    const conflict = await api('/v1/runs', { body: { model: 'default/demo', input: 'a different run' }, headers });
    expect(conflict.status).toBe(409);
    expect((await json<{ error: { code: string } }>(conflict)).error.code).toBe('idempotency_key_conflict');
    expect(await ledgerCounts()).toEqual(mid);
    open();
    expect(await finished(a.body.run_id)).toMatchObject({ status: 'completed' });
    expect(sys.model.requests.filter((r) => r.body.messages.some((m) => m.content === 'idempotent run'))).toHaveLength(1);
  });
});

describe('GET /v1/runs/{id}/events', () => {
  it('streams the status, the deltas and run.completed, then ends', async () => {
    const open = gate('events please');
    const started = await startRun({ input: 'events please' });
    const stream = await follow(started.body.run_id);
    await eventually(() => stream.events.some((e) => e.event === 'run.status' && e.status === 'running'), 'the run is running');
    open();
    const events = await stream.done;
    expect(events.every((e) => e.run_id === started.body.run_id && e.frameEvent === e.event && typeof e.timestamp === 'number')).toBe(true);
    const deltas = events.filter((e) => e.event === 'message.delta').map((e) => e.delta as string);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('echo: events please');
    expect(events.at(-1)).toMatchObject({ event: 'run.completed', output: 'echo: events please', usage: { input_tokens: 10 } });
  });

  it('answers HEAD with the stream\'s headers at once, leaving the connection free', async () => {
    // HEAD used to follow the running turn for a body it never sends: a keep-alive client's next
    // request on that connection waited until the run ended.
    gate('head only'); // never opened: the run does not end during this test
    const started = await startRun({ input: 'head only' });
    const { hostname, port } = new URL(sys.gateway.url);
    const answers = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => socket.write(
        `HEAD /v1/runs/${started.body.run_id}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testApiKey}\r\n\r\n` +
        'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
      let text = '';
      socket.on('data', (c: Buffer) => { text += c.toString(); });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    const heads = answers.split('HTTP/1.1 ').slice(1);
    expect(heads.map((h) => h.slice(0, 3))).toEqual(['200', '200']);
    expect(heads[0]).toMatch(/content-type: text\/event-stream/i);
    expect(heads[1]).toContain('{"status":"ok"}');
  });

  it('gives a late follower the final event at once', async () => {
    const started = await startRun({ input: 'late follower' });
    await finished(started.body.run_id);
    const events = await (await follow(started.body.run_id)).done;
    // No run.status: the run's end is its run.<status> event, not the ledger's `terminal`.
    expect(events.map((e) => e.event)).toEqual(['run.completed']);
  });
});

describe('POST /v1/runs/{id}/stop', () => {
  it('stops the running turn through the /stop signal path, once however often it is asked', async () => {
    gate('hang forever'); // never opened: only a stop ends this model call
    const started = await startRun({ input: 'hang forever' });
    const stream = await follow(started.body.run_id);
    await eventually(() => sys.model.inFlight().some((r) => r.body.messages.some((m) => m.content === 'hang forever')), 'the model call is in flight');
    const before = await ledgerCounts();
    const stop = await api(`/v1/runs/${started.body.run_id}/stop`, { method: 'POST' });
    expect([stop.status, await stop.json()]).toEqual([200, { object: 'hermes.run', run_id: started.body.run_id, status: 'stopping' }]);
    // A bodiless POST sent with content-type: application/json (as OpenAI's SDK sends one) is no body, not a 400.
    const stopAgain = await api(`/v1/runs/${started.body.run_id}/stop`, { method: 'POST', body: '' });
    expect([stopAgain.status, await stopAgain.json()]).toEqual([200, expect.objectContaining({ object: 'hermes.run', run_id: started.body.run_id })]);
    const events = await stream.done;
    expect(events.at(-1)).toMatchObject({ event: 'run.cancelled' });
    expect(await finished(started.body.run_id)).toMatchObject({ status: 'cancelled' });
    const after = await ledgerCounts();
    expect(after.admissions - before.admissions).toBe(1); // one /stop admission for both requests
    expect(after.signals - before.signals).toBe(1);
    await eventually(() => sys.model.requests.some((r) => r.body.messages.some((m) => m.content === 'hang forever') && r.aborted), 'the model call was cut');
    // Stopping a finished run changes nothing and admits nothing.
    const late = await api(`/v1/runs/${started.body.run_id}/stop`, { method: 'POST' });
    expect(await late.json()).toMatchObject({ run_id: started.body.run_id, status: 'cancelled' });
    expect((await ledgerCounts()).admissions).toBe(after.admissions);
  });

  it('answers 404 to another key, for stop, status and events', async () => {
    const started = await startRun({ input: 'not yours' });
    await finished(started.body.run_id);
    const before = await ledgerCounts();
    for (const [path, method] of [[`/v1/runs/${started.body.run_id}/stop`, 'POST'], [`/v1/runs/${started.body.run_id}`, 'GET'], [`/v1/runs/${started.body.run_id}/events`, 'GET']] as const) {
      const res = await api(path, { method, key: OTHER_KEY });
      expect(res.status).toBe(404);
      expect((await json<{ error: { code: string } }>(res)).error.code).toBe('run_not_found');
    }
    expect((await api('/v1/runs/run_00000000000000000000000000000000')).status).toBe(404);
    expect(await ledgerCounts()).toEqual(before);
  });
});

describe('GET /v1/sessions', () => {
  it('lists only the caller\'s sessions, newest first, paged, with their message counts', async () => {
    const mine = [];
    for (const name of ['list-a', 'list-b', 'list-c']) {
      const r = await startRun({ input: `hello ${name}`, session_id: name });
      await finished(r.body.run_id);
      mine.push(r.body.run_id);
    }
    const theirs = await startRun({ input: 'their session', session_id: 'list-theirs' }, { key: OTHER_KEY });
    await finished(theirs.body.run_id, OTHER_KEY);

    type Page = { object: string; data: { id: string; key: string; model: string; message_count: number; created_at: number; last_activity_at: number }[]; has_more: boolean; last_id: string | null };
    const all = await json<Page>(api('/v1/sessions?limit=100'));
    const ownIdentity = `k:${sha256(testApiKey).slice(0, 12)}`;
    expect(all.object).toBe('list');
    expect(all.data.length).toBeGreaterThanOrEqual(3);
    expect(all.data.every((s) => s.key.startsWith(`agent:default/demo:api:dm:${ownIdentity}`))).toBe(true);
    expect(all.data.some((s) => s.key.endsWith(':list-theirs'))).toBe(false);
    expect(all.data.slice(0, 3).map((s) => s.key.split(':').at(-1))).toEqual(['list-c', 'list-b', 'list-a']);
    expect(all.data[0]).toMatchObject({ model: 'default/demo', message_count: 2 });
    expect(all.data[0]!.last_activity_at).toBeGreaterThanOrEqual(all.data[0]!.created_at);

    const first = await json<Page>(api('/v1/sessions?limit=2'));
    expect(first.data.map((s) => s.id)).toEqual(all.data.slice(0, 2).map((s) => s.id));
    expect(first.has_more).toBe(true);
    const second = await json<Page>(api(`/v1/sessions?limit=2&after=${first.last_id}`));
    expect(second.data.map((s) => s.id)).toEqual(all.data.slice(2, 4).map((s) => s.id));

    const theirList = await json<Page>(api('/v1/sessions', { key: OTHER_KEY }));
    expect(theirList.data.map((s) => s.key.split(':').at(-1))).toEqual(['list-theirs']);

    const one = await json(api(`/v1/sessions/${all.data[0]!.id}`));
    expect(one).toMatchObject({ id: all.data[0]!.id, object: 'hermes.session', message_count: 2 });
    const messages = await json<{ data: { role: string; content: string }[] }>(api(`/v1/sessions/${all.data[0]!.id}/messages`));
    expect(messages.data.map((m) => `${m.role}:${m.content}`)).toEqual(['user:hello list-c', 'assistant:echo: hello list-c']);
    expect((await api(`/v1/sessions/${all.data[0]!.id}`, { key: OTHER_KEY })).status).toBe(404);
    expect((await api(`/v1/sessions/${all.data[0]!.id}/messages`, { key: OTHER_KEY })).status).toBe(404);
  });

  it('narrows to one agent with model, and refuses an unknown one with the usual 404', async () => {
    const list = await json<{ data: unknown[] }>(api('/v1/sessions?model=default/second'));
    expect(list.data).toEqual([]);
    const unknown = await api('/v1/sessions?model=default/nobody');
    expect(unknown.status).toBe(404);
    expect((await json<{ error: { code: string } }>(unknown)).error.code).toBe('model_not_found');
    // The query string is named as such (it used to say 'params.limit', as if it were the path).
    const tooMany = await api('/v1/sessions?limit=1000');
    expect([tooMany.status, (await json<{ error: { message: string } }>(tooMany)).error.message]).toEqual([400, expect.stringContaining('query.limit: ')]);
  });
});

describe('refusals write nothing', () => {
  const cases: [string, () => Promise<Response>, number, string][] = [
    ['a body over HERMES_MAX_BODY_BYTES', () => api('/v1/runs', { body: { model: 'default/demo', input: 'x'.repeat(20_000) } }), 413, 'HERMES_PAYLOAD_TOO_LARGE'],
    ['malformed JSON', () => api('/v1/runs', { body: '{"input": "x"' }), 400, 'HERMES_BAD_JSON'],
    ['an unknown agent', () => api('/v1/runs', { body: { model: 'default/nobody', input: 'x' } }), 404, 'model_not_found'],
    ['no model when the key may use two agents', () => api('/v1/runs', { body: { input: 'x' } }), 400, 'HERMES_BAD_REQUEST'],
    ['an empty input', () => api('/v1/runs', { body: { model: 'default/demo', input: '' } }), 400, 'HERMES_BAD_REQUEST'],
    ['another caller\'s previous_response_id', () => api('/v1/runs', { body: { model: 'default/demo', input: 'x', previous_response_id: 'resp_00000000000000000000000000000000' } }), 404, 'response_not_found'],
  ];
  it.each(cases)('answers %s', async (_what, send, status, code) => {
    const before = await ledgerCounts();
    const res = await send();
    expect(res.status).toBe(status);
    expect((await json<{ error: { code: string } }>(res)).error.code).toBe(code);
    expect(await ledgerCounts()).toEqual(before);
  });
});
