// The whole spine in one process, as `hermes dev` runs it: HTTP → admission → BullMQ → worker →
// model (through the real openai SDK, against a fake server) → reply + delivery → HTTP, for the
// message API (with SSE) and the OpenAI-compatible endpoint (streaming and not), with the trace
// context carried from the HTTP request to the model call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { initTracing } from '../../services/core/index.js';
import { startGatewayOn } from '../../services/cli/gateway.js';
import type { RunningGateway } from '../../services/gateway/index.js';
import type { RunningWorker } from '../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../support/services.js';
import { startFakeOpenAI, lastUser, withoutSessionFacts, type FakeOpenAI } from '../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, testApiKey, type TestRuntime } from '../support/system.js';
import { sseFrames } from '../support/sse.js';

const spans = new InMemorySpanExporter();
let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let gateway: RunningGateway;
const auth = { authorization: `Bearer ${testApiKey}` };

beforeAll(async () => {
  initTracing('e2e', {}, [new SimpleSpanProcessor(spans)]);
  database = await createTestDatabase();
  model = await startFakeOpenAI((b) => ({ text: `The answer to "${lastUser(b)}" is 42.`, chunks: 4, usage: { prompt_tokens: 21, completion_tokens: 7 } }));
  rt = await openTestRuntime(testConfig(database.url, { HERMES_PORT: 0, HERMES_HOST: '127.0.0.1' }));
  await createTestAgent(rt, model.baseURL);
  worker = await startTestWorker(rt);
  gateway = await startGatewayOn(rt);
});

afterAll(async () => {
  await gateway?.close();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

/** Reads an SSE stream into events until `reply` (or the deadline). */
async function readEvents(url: string): Promise<{ event: string; data: unknown }[]> {
  const res = await fetch(url, { headers: auth });
  expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
  const events: { event: string; data: unknown }[] = [];
  for await (const { event, data } of sseFrames(res.body!)) {
    if (!event || !data) continue;
    events.push({ event, data: JSON.parse(data) });
    if (event === 'reply' || event === 'error') break;
  }
  return events;
}

describe('message → reply, end to end', () => {
  it('answers the message API, streams the reply over SSE, and records the delivery', async () => {
    const res = await fetch(`${gateway.url}/v1/agents/default/demo/messages`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ content: 'life' }),
    });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { admissionId: string; links: { self: string; events: string } };
    const events = await readEvents(`${gateway.url}${body.links.events}`);
    const reply = events.find((e) => e.event === 'reply');
    expect(reply?.data).toMatchObject({ content: 'The answer to "life" is 42.', outcome: 'completed' });

    const done = await eventually(async () => {
      const r = await fetch(`${gateway.url}${body.links.self}`, { headers: auth });
      const a = (await r.json()) as { state: string; reply: { content: string; delivery: { state: string } } | null };
      return a.reply?.delivery.state === 'delivered' ? a : undefined;
    }, 'delivered reply');
    expect(done).toMatchObject({ state: 'terminal', reply: { content: 'The answer to "life" is 42.' } });
  });

  it('answers the OpenAI SDK, non-streaming, with usage', async () => {
    const client = new OpenAI({ apiKey: testApiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const out = await client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'the universe' }] });
    expect(out.choices[0]!.message.content).toBe('The answer to "the universe" is 42.');
    expect(out.usage).toMatchObject({ prompt_tokens: 21, completion_tokens: 7, total_tokens: 28 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['default/demo']);
  });

  it('streams to the OpenAI SDK, and carries the caller\'s conversation to the model', async () => {
    const client = new OpenAI({ apiKey: testApiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'default/demo', stream: true,
      messages: [{ role: 'user', content: 'remember 7' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'everything' }],
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('The answer to "everything" is 42.');
    expect(finish).toBe('stop');
    const seen = model.requests.find((r) => lastUser(r.body) === 'everything')!;
    expect(withoutSessionFacts(seen.body.messages).map((m) => `${m.role}:${m.content}`).slice(1)).toEqual(['user:remember 7', 'assistant:ok', 'user:everything']);
  });

  it('admits a duplicate inbound event once: one turn, one model call', async () => {
    const send = () => fetch(`${gateway.url}/v1/agents/default/demo/messages`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'evt-dup-1' }, body: JSON.stringify({ content: 'only once' }),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { admissionId: string; duplicate: boolean } }));
    const [a, b] = await Promise.all([send(), send()]);
    expect(a.body.admissionId).toBe(b.body.admissionId);
    expect([a.body.duplicate, b.body.duplicate].sort()).toEqual([false, true]);
    await eventually(() => model.requests.some((r) => lastUser(r.body) === 'only once' && r.finished), 'the one model call');
    await eventually(async () => {
      const r = await fetch(`${gateway.url}/v1/agents/default/demo/admissions/${a.body.admissionId}`, { headers: auth });
      return ((await r.json()) as { state: string }).state === 'terminal';
    }, 'terminal');
    expect(model.requests.filter((r) => lastUser(r.body) === 'only once')).toHaveLength(1);
  });

  it('carries the trace context from the HTTP request through the queue to the model call', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      body: JSON.stringify({ model: 'default/demo', messages: [{ role: 'user', content: 'traced' }] }),
    });
    expect(res.status).toBe(200);
    const turn = await eventually(() => spans.getFinishedSpans().find((s) => s.name === 'hermes.turn' && s.spanContext().traceId === traceId), 'turn span in the trace');
    expect(turn.attributes['hermes.admission_id']).toBeTruthy();
    const call = spans.getFinishedSpans().find((s) => s.name === 'hermes.model_call' && s.spanContext().traceId === traceId);
    expect(call?.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
    const seen = model.requests.find((r) => lastUser(r.body) === 'traced')!;
    expect(String(seen.headers.traceparent)).toContain(traceId);
  });
});
