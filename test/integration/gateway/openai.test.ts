// The OpenAI-compatible API through the official `openai` SDK against a listening gateway, with
// the turn played by an in-test worker on the real ledger.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAdmission } from '../../../services/core/index.js';
import { buildGatewayApp, startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import { admissionWithContent, auth, openHarness, runFakeTurn, subscribed, testKey, type FakeTurn, type Harness } from './harness.js';

let h: Harness;
let gw: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  h = await openHarness({ HERMES_PORT: 0, HERMES_HOST: '127.0.0.1' });
  gw = await startGateway(h.deps);
  client = new OpenAI({ apiKey: testKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.close();
  await h?.close();
});

/** Plays the turn of the admission with `content` once the gateway listens for its events. */
async function playTurn(content: string, turn: FakeTurn): Promise<string> {
  const id = await admissionWithContent(h, content);
  await subscribed(h, id);
  await runFakeTurn(h, id, turn);
  return id;
}

const chat = (payload: unknown, headers: Record<string, string> = auth()) =>
  h.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { 'content-type': 'application/json', ...headers }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });

describe('GET /v1/models', () => {
  it('lists the agents the key may use', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['default/demo']);
    expect(models.data[0]).toMatchObject({ object: 'model', owned_by: 'hermes' });
  });

  it('retrieves one model as the SDK asks for it, and 404s one the key may not use', async () => {
    // GET /v1/models/{model} used to be a 404 'No such route', so client.models.retrieve failed for every model.
    expect(await client.models.retrieve('default/demo')).toMatchObject({ id: 'default/demo', object: 'model', owned_by: 'hermes' });
    expect(await client.models.retrieve('demo')).toMatchObject({ id: 'default/demo' });
    const twoSegments = await h.app.inject({ method: 'GET', url: '/v1/models/default/demo', headers: auth() });
    expect([twoSegments.statusCode, twoSegments.json().id]).toEqual([200, 'default/demo']);
    await expect(client.models.retrieve('default/nobody')).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
  });

  it('refuses a key no agent accepts with 401', async () => {
    const bad = new OpenAI({ apiKey: 'nope', baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await expect(bad.models.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  });
});

describe('POST /v1/chat/completions', () => {
  it('answers with the turn reply and keeps the earlier messages as caller history', async () => {
    const pending = client.chat.completions.create({
      model: 'default/demo',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'assistant', content: 'Hi!' }, { role: 'user', content: [{ type: 'text', text: 'what is 2+2?' }] }],
    }).withResponse();
    const id = await playTurn('what is 2+2?', { result: { outcome: 'completed', reply: '4' } });
    const { data, response } = await pending;
    expect(data).toMatchObject({ id: `chatcmpl-${id}`, object: 'chat.completion', model: 'default/demo', choices: [{ index: 0, message: { role: 'assistant', content: '4' }, finish_reason: 'stop' }] });
    expect(data.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    expect(response.headers.get('x-hermes-session-id')).toMatch(/^chat-/);
    expect((await getAdmission(h.db.pool, id))?.callerHistory).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'assistant', content: 'Hi!' }]);
  });

  it('continues a stored conversation named by X-Hermes-Session-Id, without caller history', async () => {
    const pending = client.chat.completions.create(
      { model: 'demo', messages: [{ role: 'user', content: 'earlier' }, { role: 'user', content: 'continue please' }] },
      { headers: { 'X-Hermes-Session-Id': 'conv-7' } },
    ).withResponse();
    const id = await playTurn('continue please', { result: { outcome: 'completed', reply: 'continued' } });
    const { data, response } = await pending;
    expect(data.choices[0]!.message.content).toBe('continued');
    expect(response.headers.get('x-hermes-session-id')).toBe('conv-7');
    const admission = await getAdmission(h.db.pool, id);
    expect(admission?.callerHistory).toBeNull();
    const key = await h.db.pool.query('SELECT session_key FROM sessions WHERE id = $1', [admission!.sessionId]);
    expect(key.rows[0].session_key).toMatch(/^agent:default\/demo:api:dm:k:[0-9a-f]{12}:conv-7$/);
  });

  it('streams the role, the deltas, the missing rest, a stop chunk and [DONE]', async () => {
    const stream = await client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'stream it' }], stream: true });
    const turn = playTurn('stream it', { deltas: ['Hel', 'lo '], result: { outcome: 'completed', reply: 'Hello world' } });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    await turn;
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe('Hello world');
    expect(chunks.map((c) => c.choices[0]!.delta.content).filter(Boolean)).toEqual(['Hel', 'lo ', 'world']);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  });

  it('streams the whole reply at the end when no delta arrived', async () => {
    const stream = await client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'quiet worker' }], stream: true });
    const turn = playTurn('quiet worker', { result: { outcome: 'completed', reply: 'all at once' } });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    await turn;
    expect(text).toBe('all at once');
  });

  it('answers 502 with the reason when the turn failed', async () => {
    const pending = client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'fail please' }] });
    const settled = pending.then(() => undefined, (err: unknown) => err);
    await playTurn('fail please', { result: { outcome: 'failed', reply: 'The model provider refused the request (quota).', error: 'HTTP 429' } });
    const err = await settled;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err).toMatchObject({ status: 502, code: 'HERMES_TURN_FAILED' });
    expect((err as Error).message).toContain('quota');
  });

  it('answers 502 "interrupted, not re-run" when the worker died mid-turn, also in a stream', async () => {
    const pending = client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'die please' }] });
    const settled = pending.then(() => undefined, (err: unknown) => err);
    await playTurn('die please', { dies: true });
    expect(await settled).toMatchObject({ status: 502, code: 'HERMES_TURN_INTERRUPTED' });

    const stream = await client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'die in a stream' }], stream: true });
    const turn = playTurn('die in a stream', { dies: true });
    const consumed = (async () => { for await (const _ of stream) { /* drain */ } })();
    await expect(consumed).rejects.toThrow(/not run again/);
    await turn;
  });

  it('answers with the reply of the resume when a worker shutdown cut the turn, also in a stream', async () => {
    const pending = client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'cut me' }] });
    await playTurn('cut me', { cutThenResume: { result: { outcome: 'completed', reply: 'resumed and done' } } });
    expect((await pending).choices[0]?.message.content).toBe('resumed and done');

    const stream = await client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'cut my stream' }], stream: true });
    const text = (async () => {
      let all = '';
      for await (const chunk of stream) all += chunk.choices[0]?.delta.content ?? '';
      return all;
    })();
    await playTurn('cut my stream', { deltas: ['par', 'tial '], cutThenResume: { deltas: ['resumed'], result: { outcome: 'completed', reply: 'resumed' } } });
    expect(await text).toBe('partial resumed');
  });

  it('answers 504 after HERMES_REPLY_WAIT_SECONDS, the admission still accepted', async () => {
    const app = buildGatewayApp({ ...h.deps, config: { ...h.config, HERMES_REPLY_WAIT_SECONDS: 0.2 } });
    try {
      const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...auth(), 'content-type': 'application/json' }, payload: JSON.stringify({ model: 'default/demo', messages: [{ role: 'user', content: 'too slow' }] }) });
      expect(res.statusCode).toBe(504);
      expect(res.json().error).toMatchObject({ type: 'server_error', code: 'HERMES_REPLY_TIMEOUT', param: null });
      const id = res.headers['x-hermes-admission-id'] as string;
      expect((await getAdmission(h.db.pool, id))?.state).toBe('queued');
    } finally {
      await app.close();
    }
  });

  const refusals: [string, () => ReturnType<typeof chat>, number, string][] = [
    ['a last message that is not from the user', () => chat({ model: 'default/demo', messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }] }), 400, 'HERMES_BAD_REQUEST'],
    ['malformed JSON', () => chat('{"model":'), 400, 'HERMES_BAD_JSON'],
    ['no messages', () => chat({ model: 'default/demo', messages: [] }), 400, 'HERMES_BAD_REQUEST'],
    ['an unknown model', () => chat({ model: 'default/nobody', messages: [{ role: 'user', content: 'q' }] }), 404, 'model_not_found'],
    ['a key of another agent (404, as OpenAI does for a model the key cannot use)', () => chat({ model: 'default/demo', messages: [{ role: 'user', content: 'q' }] }, auth('other-key')), 404, 'model_not_found'],
    ['no key', () => chat({ model: 'default/demo', messages: [{ role: 'user', content: 'q' }] }, {}), 401, 'invalid_api_key'],
  ];
  it('shows a chat completion body when the JSON is malformed', async () => {
    // It used to suggest the message API's {"content": "hello"}, which this route refuses.
    expect((await chat('{"model":')).json().error.message).toBe('The request body is not valid JSON. Send a JSON object, e.g. {"model": "<namespace>/<agent>", "messages": [{"role": "user", "content": "hello"}]}.');
  });

  it('says which content it takes when a message has an image part', async () => {
    // It used to say only 'body.messages.0.content: Invalid input.'
    const res = await chat({ model: 'default/demo', messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }] });
    expect([res.statusCode, res.json().error.message]).toEqual([400, expect.stringContaining('body.messages.0.content: send a string or text parts ({"type": "text", "text": …}); image, audio and file parts are not supported.')]);
  });

  it.each(refusals)('refuses %s in OpenAI error shape', async (_what, send, status, code) => {
    const res = await send();
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual({ error: { message: expect.any(String), type: expect.any(String), code, param: null } });
  });
});

describe('graceful close', () => {
  it('answers a waiting completion 503 when the gateway closes', async () => {
    const own = await startGateway(h.deps);
    const pending = fetch(`${own.url}/v1/chat/completions`, {
      method: 'POST', headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default/demo', messages: [{ role: 'user', content: 'closing soon' }] }),
    });
    await subscribed(h, await admissionWithContent(h, 'closing soon'));
    await own.close();
    const res = await pending;
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { code: 'HERMES_GATEWAY_CLOSING', type: 'server_error', param: null } });
  });
});
