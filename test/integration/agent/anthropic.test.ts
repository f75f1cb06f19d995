// The Anthropic adapter through the real `@anthropic-ai/sdk` against a wire-level fake: streamed
// text, tool_use blocks, usage with cache fields, cache breakpoints and error classification.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider, callModel, CredentialPool, classifyError, getTimeTool, runAgentLoop, toolSpec } from '../../../services/agent/index.js';
import { lastUserText, startFakeAnthropic, type FakeAnthropic } from '../../support/fake-anthropic.js';
import { recordingClock } from './helpers.js';

let fake: FakeAnthropic;
let provider: AnthropicProvider;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  provider = new AnthropicProvider({ apiKey: 'sk-ant-test', baseURL: fake.baseURL, timeoutMs: 10_000 });
});
afterAll(async () => {
  await fake?.close();
});

const signal = () => new AbortController().signal;
type Blocks = { type: string; cache_control?: unknown }[];
const breakpoints = (b: { system?: unknown; messages: { content: unknown }[] }) =>
  [...((b.system ?? []) as Blocks), ...b.messages.flatMap((m) => (Array.isArray(m.content) ? (m.content as Blocks) : []))].filter((c) => c.cache_control).length;

describe('Anthropic adapter', () => {
  it('streams text and reports usage with cache read/write tokens', async () => {
    fake.setScript((b) => ({ text: `echo: ${lastUserText(b)}`, usage: { input_tokens: 40, output_tokens: 7, cache_creation_input_tokens: 30, cache_read_input_tokens: 5 } }));
    const deltas: string[] = [];
    const out = await provider.complete({ model: 'claude-test', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello' }], signal: signal(), onDelta: (t) => deltas.push(t) });
    expect(out.text).toBe('echo: hello');
    expect(deltas.join('')).toBe('echo: hello');
    expect(deltas.length).toBeGreaterThan(1);
    expect(out.usage).toEqual({ inputTokens: 40, outputTokens: 7, cacheReadTokens: 5, cacheWriteTokens: 30, reasoningTokens: 0 });
    const req = fake.requests.at(-1)!;
    expect(String(req.headers['x-api-key'] ?? req.headers.authorization)).toContain('sk-ant-test');
    expect(req.body.stream).toBe(true);
    expect(req.body.system).toEqual([{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]);
  });

  it('prices a call whose counts are unreadable on counts estimated from its text, and takes no discount from a garbage cache count', async () => {
    // 400 characters of user text: ceil((400 + 8) / 4) = 102 input tokens; 40 of answer: 10.
    const ask = () => provider.complete({ model: 'claude-test', messages: [{ role: 'user', content: 'q'.repeat(400) }], signal: signal() });
    for (const usage of [{ input_tokens: -500, output_tokens: 7 }, { input_tokens: 40, output_tokens: 'seven' }, { output_tokens: 7 }]) {
      fake.setScript(() => ({ text: 'a'.repeat(40), usage }));
      const out = await ask();
      expect(out.text).toBe('a'.repeat(40));
      expect(out.usage).toEqual({ inputTokens: 102, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: true });
    }
    fake.setScript(() => ({ text: 'ok', usage: { input_tokens: 40, output_tokens: 7, cache_read_input_tokens: 'lots', cache_creation_input_tokens: -3 } }));
    expect((await ask()).usage).toEqual({ inputTokens: 40, outputTokens: 7, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
  });

  it('parses tool_use blocks and sends tool results back as tool_result blocks, with at most 4 cache breakpoints', async () => {
    fake.setScript(() => ({ toolUses: [{ id: 'toolu_1', name: 'get_time', input: { timezone: 'UTC' } }] }));
    const out = await provider.complete({ model: 'claude-test', messages: [{ role: 'user', content: 'time?' }], tools: [toolSpec(getTimeTool)], signal: signal() });
    expect(out.toolCalls).toEqual([{ id: 'toolu_1', name: 'get_time', arguments: '{"timezone":"UTC"}' }]);
    expect(out.finishReason).toBe('tool_use');
    expect(fake.requests.at(-1)!.body.tools).toEqual([{ name: 'get_time', description: getTimeTool.description, input_schema: toolSpec(getTimeTool).parameters }]);

    fake.setScript(() => ({ text: 'It is noon.' }));
    const history = [
      { role: 'system' as const, content: 'stable layer' }, { role: 'system' as const, content: 'volatile layer' },
      { role: 'user' as const, content: 'one' }, { role: 'assistant' as const, content: 'two' },
      { role: 'user' as const, content: 'time?' }, { role: 'assistant' as const, content: '', toolCalls: out.toolCalls },
      { role: 'tool' as const, content: '{"iso":"2026-12-02T12:00:00Z"}', toolCallId: 'toolu_1', name: 'get_time' },
    ];
    await provider.complete({ model: 'claude-test', messages: history, signal: signal() });
    const body = fake.requests.at(-1)!.body;
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(body.messages[3]!.content).toEqual([{ type: 'tool_use', id: 'toolu_1', name: 'get_time', input: { timezone: 'UTC' }, cache_control: { type: 'ephemeral' } }]);
    expect(body.messages[4]!.content).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"iso":"2026-12-02T12:00:00Z"}', cache_control: { type: 'ephemeral' } }]);
    // static prefix + end of system + last 2 messages
    expect(breakpoints(body)).toBe(4);
    expect((body.system as Blocks).map((b) => Boolean(b.cache_control))).toEqual([true, true]);
  });

  it('classifies 529 overloaded and retries it through the model call', async () => {
    let n = 0;
    fake.setScript(() => (n++ === 0 ? { status: 529, errorType: 'overloaded_error', errorMessage: 'Overloaded' } : { text: 'recovered' }));
    const clock = recordingClock();
    const r = await callModel({ routes: [{ key: 'anthropic', model: 'claude-test', pool: new CredentialPool('a', [provider]) }], request: { messages: [{ role: 'user', content: 'x' }], signal: signal() }, clock });
    expect(r.ok && r.completion.text).toBe('recovered');
    expect(clock.sleeps).toEqual([2_000]);
    const err = await provider.complete({ model: 'claude-test', messages: [{ role: 'user', content: 'x' }], signal: signal() }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeUndefined();
    fake.setScript(() => ({ status: 401, errorType: 'authentication_error' }));
    const auth = await provider.complete({ model: 'claude-test', messages: [{ role: 'user', content: 'x' }], signal: signal() }).then(() => undefined, (e: unknown) => e);
    expect(classifyError(auth)).toMatchObject({ reason: 'auth', status: 401 });
  });

  it('runs the tool loop end to end on Anthropic', async () => {
    fake.setScript((b) => {
      const last = b.messages.at(-1)!;
      const isResult = Array.isArray(last.content) && last.content.some((c) => c.type === 'tool_result');
      return isResult ? { text: 'Done.' } : { toolUses: [{ name: 'get_time', input: {} }] };
    });
    const out = await runAgentLoop({
      sessionId: 's', routes: [{ key: 'anthropic', model: 'claude-test', pool: new CredentialPool('a', [provider]) }],
      system: [{ role: 'system', content: 'sys' }], history: [{ role: 'user', content: 'time?' }], tools: [getTimeTool], signal: signal(), clock: recordingClock(),
      persist: { assistant: async () => undefined, toolResult: async () => undefined },
    });
    expect(out).toMatchObject({ outcome: 'completed', reply: 'Done.', iterations: 2 });
    const results = fake.requests.at(-1)!.body.messages.at(-1)!.content as { type: string; content: string }[];
    expect(JSON.parse(results[0]!.content)).toMatchObject({ iso: '2026-12-02T12:00:00.000Z', timezone: 'UTC' });
  });
});
