// The 420 s tool batch deadline inside the loop, on fake time: a side-effecting tool that never
// returns (and ignores its signal) is abandoned with an explicit result and effect `unknown`;
// the model sees that result and the turn goes on to an answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CredentialPool, defineTool, OpenAIChatProvider, runAgentLoop, TOOL_BATCH_TIMEOUT_MS, type ChatMessage, type EffectDisposition } from '../../../services/agent/index.js';
import { eventually } from '../../support/services.js';
import { startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { recordingClock } from './helpers.js';
import { manualClock } from './manual-clock.js';

let server: FakeOpenAI;
beforeAll(async () => {
  server = await startFakeOpenAI((b: ChatRequestBody) => (b.messages.at(-1)!.role === 'user'
    ? { toolCalls: [{ id: 'h1', name: 'hang', arguments: '{}' }] }
    : { text: `went on after: ${b.messages.at(-1)!.content}` }));
});
afterAll(async () => server?.close());

let entered = 0;
const hang = defineTool({
  name: 'hang', description: 'Never returns and ignores cancellation.', toolset: 'test', sideEffect: 'writes',
  schema: z.object({}).strict(),
  handler: () => { entered++; return new Promise<string>(() => undefined); },
});

describe('tool batch deadline in the loop', () => {
  it('abandons a tool still running after 420 s of fake time with an explicit result; the turn goes on', async () => {
    const stored: { msg: ChatMessage; disposition: EffectDisposition }[] = [];
    const time = manualClock();
    const pool = new CredentialPool('fake', [new OpenAIChatProvider({ apiKey: 'sk-a', baseURL: server.baseURL, timeoutMs: 10_000 })]);
    const turn = runAgentLoop({
      sessionId: 's', routes: [{ key: 'fake', model: 'gpt-test', pool }], system: [], history: [{ role: 'user', content: 'go' }],
      tools: [hang], signal: new AbortController().signal, clock: recordingClock(), toolTimeout: { clock: time.clock },
      persist: { assistant: async () => undefined, toolResult: async (msg, disposition) => { stored.push({ msg, disposition }); } },
    });
    await eventually(async () => entered > 0 || undefined, 'the tool is running');
    time.advance(TOOL_BATCH_TIMEOUT_MS - 1);
    await new Promise((r) => setImmediate(r));
    expect(stored).toEqual([]);
    time.advance(1);
    const out = await turn;
    const explicit = 'timed out: hang was still running when the tool batch deadline of 420 s passed; its result was not awaited and its effect is unknown.';
    expect(stored).toEqual([{ msg: expect.objectContaining({ role: 'tool', toolCallId: 'h1', content: explicit }), disposition: 'unknown' }]);
    expect(out.outcome).toBe('completed');
    expect(out.reply).toBe(`went on after: ${explicit}`);
    expect(server.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'h1', content: explicit });
    expect(time.pending()).toBe(0);
  });
});
