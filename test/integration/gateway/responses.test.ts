// POST/GET/DELETE /v1/responses through the official `openai` SDK against a listening gateway, a
// real worker and the fake model (test/support/fake-openai.ts): non-streamed and streamed
// answers, previous_response_id chains (the model sees the earlier turns), instructions,
// store: false, background, Idempotency-Key replays and conflicts, another caller's ids, and the
// refusals (413, 400, 404, 409) that write nothing to the ledger.
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../../services/core/index.js';
import { lastUser, type ChatRequestBody } from '../../support/fake-openai.js';
import { eventually } from '../../support/services.js';
import { createTestAgent, testAgent, testApiKey, useGatewaySystem } from '../../support/system.js';
import { acquireLease, admit, publishRevision, registerInstance, releaseLease } from '../../../services/core/index.js';

const OTHER_KEY = 'second-key-0123456789';
const STRANGER_KEY = 'stranger-key-0123456789';

const sys = useGatewaySystem((b: ChatRequestBody) => ({ text: `echo: ${lastUser(b)}`, chunks: 3 }), { HERMES_MAX_BODY_BYTES: 16_384 });
let client: OpenAI;
let other: OpenAI;

beforeAll(async () => {
  // Two keys of one agent (two callers), and a key of another agent only.
  await createTestAgent(sys.rt, sys.model.baseURL, { api: { enabled: true, keySha256: [sha256(testApiKey), sha256(OTHER_KEY)] } });
  await publishRevision(sys.rt.db, testAgent(sys.model.baseURL, { agent: { namespace: 'default', name: 'elsewhere' }, api: { enabled: true, keySha256: [sha256(STRANGER_KEY)] } }));
  client = new OpenAI({ apiKey: testApiKey, baseURL: `${sys.gateway.url}/v1`, maxRetries: 0 });
  other = new OpenAI({ apiKey: OTHER_KEY, baseURL: `${sys.gateway.url}/v1`, maxRetries: 0 });
});

const count = async (table: string) => Number((await sys.rt.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
const ledgerCounts = async () => ({ admissions: await count('admissions'), apiTurns: await count('api_turns'), sessions: await count('sessions'), users: await count('users') });
/** The (first) model request that carried the user line `text`. */
const modelRequestWith = (text: string) => sys.model.requests.find((r) => r.body.messages.some((m) => m.role === 'user' && m.content === text))!;
const raw = (path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) =>
  fetch(`${sys.gateway.url}${path}`, {
    method: init.method ?? 'POST',
    headers: { authorization: `Bearer ${testApiKey}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });

describe('POST /v1/responses', () => {
  it('answers a string input with a completed response object', async () => {
    const res = await client.responses.create({ model: 'default/demo', input: 'first question' });
    expect(res).toMatchObject({ object: 'response', status: 'completed', model: 'default/demo', previous_response_id: null, store: true, error: null });
    expect(res.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(res.output_text).toBe('echo: first question');
    expect(res.output).toEqual([expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed', content: [expect.objectContaining({ type: 'output_text', text: 'echo: first question' })] })]);
    expect(res.usage).toMatchObject({ input_tokens: 10, output_tokens: 'echo: first question'.length });
  });

  it('continues the conversation with previous_response_id: the model sees the earlier turns, also across a chain', async () => {
    const one = await client.responses.create({ model: 'default/demo', input: 'my name is Ada', instructions: 'Answer in one line.' });
    const two = await client.responses.create({ model: 'default/demo', input: 'what is my name?', previous_response_id: one.id, instructions: 'Be terse.' });
    const three = await client.responses.create({ input: 'and again?', previous_response_id: two.id } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(two).toMatchObject({ status: 'completed', previous_response_id: one.id, instructions: 'Be terse.' });
    expect(three.previous_response_id).toBe(two.id);
    const seen = modelRequestWith('and again?').body.messages.filter((m) => m.role !== 'system').map((m) => `${m.role}:${m.content}`);
    expect(seen).toEqual(['user:my name is Ada', 'assistant:echo: my name is Ada', 'user:what is my name?', 'assistant:echo: what is my name?', 'user:and again?']);
    // instructions apply to their own turn, layered on the agent's prompt, also on a continued conversation.
    const systemOf = (text: string) => modelRequestWith(text).body.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
    expect(systemOf('my name is Ada')).toContain('Answer in one line.');
    expect(systemOf('what is my name?')).toContain('Be terse.');
    expect(systemOf('what is my name?')).not.toContain('Answer in one line.');
    expect(systemOf('what is my name?')).toContain('You are the test agent.');
    // One session for the chain.
    const sessions = await sys.rt.db.pool.query(`SELECT DISTINCT a.session_id FROM api_turns t JOIN admissions a ON a.id = t.admission_id WHERE t.id = ANY($1)`, [[one.id, two.id, three.id]]);
    expect(sessions.rowCount).toBe(1);
  });

  it('keeps earlier input items as the history of a new conversation', async () => {
    const res = await client.responses.create({
      model: 'demo',
      input: [
        { role: 'developer', content: 'Speak like a pirate.' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'output_text', text: 'ahoy' }] } as unknown as OpenAI.Responses.ResponseInputItem,
        { role: 'user', content: [{ type: 'input_text', text: 'items question' }] },
      ],
    });
    expect(res.output_text).toBe('echo: items question');
    const messages = modelRequestWith('items question').body.messages;
    expect(messages.filter((m) => m.role !== 'system').map((m) => m.content)).toEqual(['hi', 'ahoy', 'items question']);
    expect(messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n')).toContain('Speak like a pirate.');
  });

  it('streams the Responses events with text deltas and a completed response', async () => {
    const stream = await client.responses.create({ model: 'default/demo', input: 'stream this please', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    const deltas = events.filter((e): e is OpenAI.Responses.ResponseTextDeltaEvent => e.type === 'response.output_text.delta').map((e) => e.delta);
    expect(deltas.join('')).toBe('echo: stream this please');
    expect(deltas.length).toBeGreaterThan(1);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const done = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(done.response.status).toBe('completed');
    expect(done.response.output[0]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text: 'echo: stream this please' }] });
  });

  it('drives the SDK stream helper to a final response, continuing a chain', async () => {
    const first = await client.responses.create({ model: 'default/demo', input: 'helper one' });
    const helper = client.responses.stream({ model: 'default/demo', input: 'helper two', previous_response_id: first.id });
    let text = '';
    helper.on('response.output_text.delta', (e) => { text += e.delta; });
    const final = await helper.finalResponse();
    expect(final.output_text).toBe('echo: helper two');
    expect(text).toBe('echo: helper two');
    expect(final.previous_response_id).toBe(first.id);
  });

  it('answers background: true at once; GET follows it to completion', async () => {
    const started = await client.responses.create({ model: 'default/demo', input: 'in the background', background: true });
    expect(started.background).toBe(true);
    expect(['queued', 'in_progress', 'completed']).toContain(started.status);
    const done = await eventually(async () => {
      const r = await client.responses.retrieve(started.id);
      return r.status === 'completed' ? r : undefined;
    }, 'the background response completed');
    expect(done.output_text).toBe('echo: in the background');
  });
});

describe('GET and DELETE /v1/responses/{id}', () => {
  it('reads a stored response, deletes it, then neither reads nor continues it', async () => {
    const res = await client.responses.create({ model: 'default/demo', input: 'to be deleted' });
    const read = await client.responses.retrieve(res.id);
    expect(read).toMatchObject({ id: res.id, status: 'completed', output_text: 'echo: to be deleted' });
    // An empty body with content-type: application/json (as OpenAI's SDK may send a DELETE) is no body, not a 400.
    const del = await raw(`/v1/responses/${res.id}`, { method: 'DELETE', body: '' });
    expect([del.status, await del.json()]).toEqual([200, { id: res.id, object: 'response', deleted: true }]);
    await expect(client.responses.retrieve(res.id)).rejects.toMatchObject({ status: 404, code: 'response_not_found' });
    await expect(client.responses.delete(res.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.create({ model: 'default/demo', input: 'continue deleted', previous_response_id: res.id })).rejects.toMatchObject({ status: 404 });
  });

  it('does not keep store: false responses for reading or continuing', async () => {
    const res = await client.responses.create({ model: 'default/demo', input: 'not stored', store: false });
    expect(res).toMatchObject({ status: 'completed', store: false, output_text: 'echo: not stored' });
    await expect(client.responses.retrieve(res.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.create({ model: 'default/demo', input: 'x', previous_response_id: res.id })).rejects.toMatchObject({ status: 404 });
  });

  it('answers 404 for another caller\'s response, for reading, deleting and continuing, without admitting anything', async () => {
    const mine = await client.responses.create({ model: 'default/demo', input: 'mine only' });
    const before = await ledgerCounts();
    await expect(other.responses.retrieve(mine.id)).rejects.toMatchObject({ status: 404, code: 'response_not_found' });
    await expect(other.responses.delete(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.responses.create({ model: 'default/demo', input: 'hijack', previous_response_id: mine.id })).rejects.toMatchObject({ status: 404 });
    const stranger = new OpenAI({ apiKey: STRANGER_KEY, baseURL: `${sys.gateway.url}/v1`, maxRetries: 0 });
    await expect(stranger.responses.create({ model: 'default/elsewhere', input: 'hijack', previous_response_id: mine.id })).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.retrieve('resp_00000000000000000000000000000000')).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.retrieve('not-an-id')).rejects.toMatchObject({ status: 404 });
    expect(await ledgerCounts()).toEqual(before);
    expect((await client.responses.retrieve(mine.id)).status).toBe('completed');
  });
});

describe('Idempotency-Key', () => {
  it('answers the same response for the same key and body, admitting once; 409 for another body', async () => {
    const before = await ledgerCounts();
    const opts = { headers: { 'Idempotency-Key': 'resp-idem-1' } };
    const [a, b] = await Promise.all([
      client.responses.create({ model: 'default/demo', input: 'exactly once' }, opts),
      client.responses.create({ model: 'default/demo', input: 'exactly once' }, opts),
    ]);
    const c = await client.responses.create({ model: 'default/demo', input: 'exactly once' }, opts).withResponse();
    expect(b.id).toBe(a.id);
    expect(c.data.id).toBe(a.id);
    expect(c.data.output_text).toBe('echo: exactly once');
    expect(c.response.headers.get('idempotency-replayed')).toBe('true');
    const after = await ledgerCounts();
    expect(after.admissions - before.admissions).toBe(1);
    expect(after.apiTurns - before.apiTurns).toBe(1);
    expect(sys.model.requests.filter((r) => r.body.messages.some((m) => m.content === 'exactly once'))).toHaveLength(1);

    const conflict = client.responses.create({ model: 'default/demo', input: 'something else' }, opts);
    await expect(conflict).rejects.toMatchObject({ status: 409, code: 'idempotency_key_conflict' });
    expect(await ledgerCounts()).toEqual(after);
  });

  it('keeps keys apart per API key', async () => {
    const opts = { headers: { 'Idempotency-Key': 'shared-name' } };
    const mine = await client.responses.create({ model: 'default/demo', input: 'key one' }, opts);
    const theirs = await other.responses.create({ model: 'default/demo', input: 'key two' }, opts);
    expect(theirs.id).not.toBe(mine.id);
    expect(theirs.output_text).toBe('echo: key two');
  });
});

describe('refusals write nothing', () => {
  const cases: [string, () => Promise<Response>, number, string][] = [
    ['a body over HERMES_MAX_BODY_BYTES', () => raw('/v1/responses', { body: JSON.stringify({ model: 'default/demo', input: 'x'.repeat(20_000) }) }), 413, 'HERMES_PAYLOAD_TOO_LARGE'],
    ['malformed JSON', () => raw('/v1/responses', { body: '{"model": "default/demo", "input": ' }), 400, 'HERMES_BAD_JSON'],
    ['an unknown agent', () => raw('/v1/responses', { body: JSON.stringify({ model: 'default/nobody', input: 'x' }) }), 404, 'model_not_found'],
    ['another agent\'s model', () => raw('/v1/responses', { body: JSON.stringify({ model: 'default/elsewhere', input: 'x' }) }), 404, 'model_not_found'],
    ['a missing input', () => raw('/v1/responses', { body: JSON.stringify({ model: 'default/demo' }) }), 400, 'HERMES_BAD_REQUEST'],
    ['an input ending with an assistant item', () => raw('/v1/responses', { body: JSON.stringify({ model: 'default/demo', input: [{ role: 'assistant', content: 'x' }] }) }), 400, 'HERMES_BAD_REQUEST'],
    ['a function_call_output item', () => raw('/v1/responses', { body: JSON.stringify({ model: 'default/demo', input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] }) }), 400, 'HERMES_BAD_REQUEST'],
    ['background with stream', () => raw('/v1/responses', { body: JSON.stringify({ model: 'default/demo', input: 'x', background: true, stream: true }) }), 400, 'HERMES_BAD_REQUEST'],
    ['no key', () => raw('/v1/responses', { body: JSON.stringify({ model: 'default/demo', input: 'x' }), headers: { authorization: '' } }), 401, 'invalid_api_key'],
  ];
  it.each(cases)('answers %s in OpenAI\'s error shape', async (_what, send, status, code) => {
    const before = await ledgerCounts();
    const res = await send();
    expect(res.status).toBe(status);
    const body = await res.json() as { error: { code: string; message: string; type: string } };
    expect(body.error.code).toBe(code);
    expect(body.error.message.length).toBeGreaterThan(10);
    expect(await ledgerCounts()).toEqual(before);
  });

  it('answers a turn past HERMES_MAX_QUEUED_PER_SESSION in its conversation with 429 rate_limit_exceeded, storing nothing', async () => {
    const first = await client.responses.create({ model: 'default/demo', input: 'start a chain' });
    const { rows: [turn] } = await sys.rt.db.pool.query(`SELECT a.session_id, a.agent_id, s.session_key FROM api_turns t JOIN admissions a ON a.id = t.admission_id JOIN sessions s ON s.id = a.session_id WHERE t.id = $1`, [first.id]);
    // A worker that holds the session and runs nothing: what is admitted now waits.
    const ghost = await registerInstance(sys.rt.db.pool, 'worker');
    const lease = (await acquireLease(sys.rt.db.pool, turn.session_id, ghost.id, 300, { instanceTtlSeconds: 300, steady: true }))!;
    try {
      for (let i = 0; i < 100; i++) await admit(sys.rt.db, { agentId: turn.agent_id, platform: 'api', sessionKey: turn.session_key, user: { platformUserId: 'filler' }, content: `waiting ${i}` });
      const before = await ledgerCounts();
      const err = await client.responses.create({ model: 'default/demo', input: 'one too many', previous_response_id: first.id }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.RateLimitError);
      expect((err as InstanceType<typeof OpenAI.RateLimitError>).error).toMatchObject({ code: 'rate_limit_exceeded', message: expect.stringContaining('100 messages are already waiting for their turn in it') });
      expect(await ledgerCounts()).toEqual(before);
    } finally {
      await releaseLease(sys.rt.db.pool, lease);
    }
  });

  it('says which input it takes for an item or part it does not (it used to say only "body.input: Invalid input.")', async () => {
    for (const input of [[{ type: 'function_call_output', call_id: 'c', output: 'x' }], [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }], 5]) {
      const res = await raw('/v1/responses', { body: JSON.stringify({ model: 'default/demo', input }) });
      const body = await res.json() as { error: { message: string } };
      expect([res.status, body.error.message]).toEqual([400, expect.stringContaining('body.input: send a string, or message items ({"role": "user", "content": …})')]);
    }
  });
});
