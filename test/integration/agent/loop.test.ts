// The agent loop inside the real worker: tool calls persisted before they run, results with
// their effect disposition, tool errors as results, the iteration budget — on real Postgres and
// Redis with the wire-level fake model behind the openai SDK.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listTranscript } from '../../../services/core/index.js';
import { builtinRegistry, defineTool, INVALID_ARGS } from '../../../services/agent/index.js';
import { lastUser, type ChatRequestBody, type Script } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';
import { recordingClock } from './helpers.js';

// A side-effecting probe: reports what the transcript held when it ran (persist-before-execute).
const probe = defineTool({
  name: 'probe', description: 'Reports the stored transcript.', toolset: 'test', sideEffect: 'writes',
  schema: z.object({ fail: z.boolean().optional() }).strict(),
  handler: async ({ fail }, ctx) => {
    if (fail) throw new Error('disk full (key sk-secretsecret123)');
    const rows = await listTranscript(sys.rt.db.pool, ctx.sessionId);
    const last = rows.at(-1)!;
    return JSON.stringify({ lastRole: last.role, lastToolCalls: (last.toolCalls ?? []).map((c) => c.name) });
  },
});

// The scripted model: the user's message says which tool calls to make; after tool results it answers.
const calls: Record<string, Script['toolCalls']> = {
  'what time is it': [{ id: 't1', name: 'get_time', arguments: '{"timezone":"UTC"}' }],
  'probe it': [{ id: 'p1', name: 'probe', arguments: '{}' }],
  'bad calls': [{ id: 'u1', name: 'no_such_tool', arguments: '{}' }, { id: 'j1', name: 'get_time', arguments: '[1,2]' }],
  'failing tool': [{ id: 'f1', name: 'probe', arguments: '{"fail":true}' }],
  'loop forever': [{ name: 'get_time', arguments: '{}' }],
  'always invalid': [{ name: 'nope', arguments: '{' }],
};
function script(b: ChatRequestBody): Script {
  const planned = calls[lastUser(b)];
  const last = b.messages.at(-1)!;
  if (planned && (last.role === 'user' || lastUser(b) === 'loop forever' || lastUser(b) === 'always invalid')) {
    return { toolCalls: planned.map((c, i) => ({ ...c, id: c.id ?? `c${b.messages.length}_${i}` })) };
  }
  return { text: `answered after ${b.messages.filter((m) => m.role === 'tool').length} tool results` };
}

const sys = useAgentSystem(script, { loop: { clock: recordingClock(), tools: builtinRegistry().register(probe) } });

async function turn(agentName: string, content: string, extra: Record<string, unknown> = {}) {
  const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: agentName }, toolsets: ['clock', 'test'], ...extra });
  const { a, reply } = await runTurn(sys.rt, { agentId, sessionKey: `agent:default/${agentName}:api:dm:u1`, content });
  return { a, reply, transcript: await listTranscript(sys.rt.db.pool, a.sessionId) };
}

describe('agent loop in the worker', () => {
  it('runs a tool call and answers with its result; only the enabled, available tools are offered, and read_tool_result', async () => {
    const { a, reply, transcript } = await turn('clocky', 'what time is it');
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('answered after 1 tool results');
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(transcript[1]!.toolCalls).toEqual([{ id: 't1', name: 'get_time', arguments: '{"timezone":"UTC"}' }]);
    expect(transcript[2]).toMatchObject({ toolCallId: 't1', effectDisposition: 'none' });
    expect(JSON.parse(transcript[2]!.content)).toMatchObject({ timezone: 'UTC' });
    const second = sys.model.requests.filter((r) => lastUser(r.body) === 'what time is it').at(-1)!.body;
    expect(second.tools!.map((t) => t.function.name)).toEqual(['get_time', 'probe', 'read_tool_result']);
    expect(second.messages.at(-2)!.tool_calls![0]!.function.name).toBe('get_time');
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 't1' });
  });

  it('commits the assistant message with its tool calls before the tool runs, and the result as applied', async () => {
    const { transcript } = await turn('prober', 'probe it');
    expect(JSON.parse(transcript[2]!.content)).toEqual({ lastRole: 'assistant', lastToolCalls: ['probe'] });
    expect(transcript[2]!.effectDisposition).toBe('applied');
  });

  it('answers unknown tools and non-object arguments as tool results, never as crashes', async () => {
    const { a, transcript } = await turn('badcalls', 'bad calls');
    expect(a.outcome).toBe('completed');
    const results = transcript.filter((m) => m.role === 'tool');
    expect(results.map((m) => m.content)).toEqual(['{"error":"Unknown tool: no_such_tool"}', INVALID_ARGS]);
    expect(results.map((m) => m.effectDisposition)).toEqual(['none', 'none']);
  });

  it('turns a handler exception into a sanitised [TOOL_ERROR] result with effect unknown', async () => {
    const { transcript } = await turn('failing', 'failing tool');
    const result = transcript.find((m) => m.role === 'tool')!;
    expect(result.content).toMatch(/^\[TOOL_ERROR\] disk full/);
    expect(result.content).not.toContain('secretsecret123');
    expect(result.effectDisposition).toBe('unknown');
  });

  it('ends at the iteration budget with a clear final message', async () => {
    const before = sys.model.requests.length;
    const { a, reply } = await turn('budget', 'loop forever', { maxIterations: 3 });
    expect(a.outcome).toBe('completed');
    expect(reply).toMatch(/stopped after 3 model calls .*iteration budget/);
    expect(sys.model.requests.length - before).toBe(3);
  });

  it('warns the model at 70 % and 90 % of the iteration budget, on the request only', async () => {
    const before = sys.model.requests.length;
    const { transcript } = await turn('pressure', 'loop forever', { maxIterations: 10 });
    const requests = sys.model.requests.slice(before).map((r) => r.body.messages);
    const lastText = requests.map((m) => String(m.at(-1)!.content));
    expect(lastText).toHaveLength(10);
    expect(lastText.slice(0, 7).filter((c) => c.includes('[Iteration budget'))).toEqual([]);
    expect(lastText[7]).toMatch(/\n\n\[Iteration budget: this is model call 8 of 10; 3 are left\. Start wrapping up your work\.\]$/);
    expect(lastText[8]).toMatch(/\n\n\[Iteration budget: this is model call 9 of 10; 2 are left\. Start wrapping up your work\.\]$/);
    expect(lastText[9]).toMatch(/\n\n\[Iteration budget: this is model call 10 of 10; it is the last one\. Give your final answer now\.\]$/);
    // Only ever on the last message of a request (the cached prefix is untouched), and never stored.
    for (const m of requests) expect(m.slice(0, -1).filter((x) => String(x.content).includes('[Iteration budget'))).toEqual([]);
    expect(transcript.filter((m) => m.content.includes('[Iteration budget'))).toEqual([]);
  });

  it('ends the turn after three invalid tool calls in a row', async () => {
    const before = sys.model.requests.length;
    const { a, reply } = await turn('invalid', 'always invalid');
    expect(a.outcome).toBe('failed');
    expect(reply).toMatch(/3 invalid, unknown or blocked tool calls in a row/);
    expect(sys.model.requests.length - before).toBe(3);
  });
});
