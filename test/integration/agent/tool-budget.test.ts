// The per-turn tool-result budget inside the loop when the turn has no spill-over storage (a bare
// loop; the worker always gives one, see tool-spill.test.ts): what the model is sent and what the
// transcript keeps are the same not-stored preview block, and read_tool_result is not offered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CredentialPool, defineTool, OpenAIChatProvider, PREVIEW_CHARS, runAgentLoop, type ChatMessage } from '../../../services/agent/index.js';
import { startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { recordingClock } from './helpers.js';

let server: FakeOpenAI;
beforeAll(async () => {
  server = await startFakeOpenAI((b: ChatRequestBody) => (b.messages.at(-1)!.role === 'user'
    ? { toolCalls: [1, 2, 3].map((i) => ({ id: `b${i}`, name: 'big', arguments: `{"fill":"${'abc'[i - 1]}"}` })) }
    : { text: 'done' }));
});
afterAll(async () => server?.close());

const big = defineTool({
  name: 'big', description: 'A large result.', toolset: 'test', sideEffect: 'read-only',
  schema: z.object({ fill: z.string() }).strict(),
  handler: ({ fill }) => fill.repeat(90_000),
});

describe('tool result budget in the loop', () => {
  it('without storage, replaces the result that would pass 200 000 characters per turn by a not-stored preview block, kept and sent alike', async () => {
    const stored: ChatMessage[] = [];
    const pool = new CredentialPool('fake', [new OpenAIChatProvider({ apiKey: 'sk-a', baseURL: server.baseURL, timeoutMs: 10_000 })]);
    const out = await runAgentLoop({
      sessionId: 's', routes: [{ key: 'fake', model: 'gpt-test', pool }], system: [], history: [{ role: 'user', content: 'go' }],
      tools: [big], signal: new AbortController().signal, clock: recordingClock(),
      persist: { assistant: async () => undefined, toolResult: async (m) => { stored.push(m); } },
    });
    expect(out.outcome).toBe('completed');
    expect(stored.map((m) => m.content.length)).toEqual([90_000, 90_000, stored[2]!.content.length]);
    expect(stored[2]!.content).toMatch(/^<tool-result-preview>/);
    expect(stored[2]!.content).toContain(`<preview>\n${'c'.repeat(PREVIEW_CHARS)}\n</preview>`);
    expect(stored[2]!.content).toContain('were cut and not stored');
    expect(server.requests.at(-1)!.body.tools!.map((t) => t.function.name)).toEqual(['big']);
    const sent = server.requests.at(-1)!.body.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(sent).toEqual(stored.map((m) => m.content));
  });
});
