// The gateway in front of the real worker and a fake model server: an OpenAI client streams a
// turn the worker runs, deltas and all (the CLI's wiring: no subscriber given, the app opens its own).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../../services/gateway/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../../support/services.js';
import { createTestAgent, openTestRuntime, startTestWorker, testApiKey, type TestRuntime } from '../../support/system.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let gw: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(() => ({ text: 'The answer is forty-two.', chunks: 4 }));
  rt = await openTestRuntime(testConfig(database.url, { HERMES_PORT: 0, HERMES_HOST: '127.0.0.1' }), 'e2e');
  await createTestAgent(rt, model.baseURL);
  worker = await startTestWorker(rt);
  gw = await startGateway(rt);
  client = new OpenAI({ apiKey: testApiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

describe('gateway + worker', () => {
  it('answers a chat completion, non-streamed and streamed', async () => {
    const plain = await client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'question one' }] });
    expect(plain.choices[0]!.message.content).toBe('The answer is forty-two.');

    const stream = await client.chat.completions.create({ model: 'default/demo', messages: [{ role: 'user', content: 'question two' }], stream: true });
    let text = '';
    let finish: string | null | undefined;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('The answer is forty-two.');
    expect(finish).toBe('stop');
  });
});
