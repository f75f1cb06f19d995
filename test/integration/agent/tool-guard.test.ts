// The tool-loop guard inside the real worker (Postgres, Redis, the fake model behind the openai
// SDK): the model sees the warnings and then the block result of a call that keeps failing; on an
// unattended platform (cron) the guard halts the turn with a clear final message, on an attended
// one it only warns.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listTranscript } from '../../../services/core/index.js';
import { builtinRegistry, defineTool } from '../../../services/agent/index.js';
import { lastUser, type ChatRequestBody, type Script } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';
import { recordingClock } from './helpers.js';

// A tool whose backend is down: every call fails. Runs are counted per session.
const runs = new Map<string, number>();
const flaky = defineTool({
  name: 'flaky', description: 'Calls a service that is down.', toolset: 'test', sideEffect: 'external',
  schema: z.object({ id: z.number() }).strict(),
  handler: (_args, ctx) => {
    runs.set(ctx.sessionId, (runs.get(ctx.sessionId) ?? 0) + 1);
    throw new Error('service unavailable');
  },
});

// 'same call': retries flaky({"id":1}) until it sees a block result, then gives up in words.
// 'stubborn': retries flaky({"id":1}) forever, blocked or not.
// 'other args': calls flaky with new arguments every time, forever.
function script(b: ChatRequestBody): Script {
  const last = b.messages.at(-1)!;
  const results = b.messages.filter((m) => m.role === 'tool').length;
  if (lastUser(b) === 'same call') {
    if (last.role === 'tool' && last.content.includes('"action":"block"')) return { text: 'giving up: the call was blocked' };
    return { toolCalls: [{ id: `s${results}`, name: 'flaky', arguments: '{"id":1}' }] };
  }
  if (lastUser(b) === 'stubborn') return { toolCalls: [{ id: `b${results}`, name: 'flaky', arguments: '{"id":1}' }] };
  return { toolCalls: [{ id: `o${results}`, name: 'flaky', arguments: `{"id":${results}}` }] };
}

const sys = useAgentSystem(script, { loop: { clock: recordingClock(), tools: builtinRegistry().register(flaky) } });

async function turn(agentName: string, content: string, platform = 'api', extra: Record<string, unknown> = {}) {
  const { rt, model } = sys;
  const agentId = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: agentName }, toolsets: ['test'], ...extra });
  const before = model.requests.length;
  const { a, reply } = await runTurn(rt, { agentId, platform, sessionKey: `agent:default/${agentName}:${platform}:dm:u1`, content });
  const results = (await listTranscript(rt.db.pool, a.sessionId)).filter((m) => m.role === 'tool');
  return { a, reply, results, requests: model.requests.slice(before).map((r) => r.body), ran: runs.get(a.sessionId) ?? 0 };
}

describe('tool-loop guard in the worker', () => {
  it('warns from the 2nd identical failure, blocks the 6th call without running it, and the model goes on', async () => {
    const { a, reply, results, requests, ran } = await turn('samecall', 'same call');
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('giving up: the call was blocked');
    expect(ran).toBe(5);
    expect(results).toHaveLength(6);
    expect(results[0]!.content).toBe('[TOOL_ERROR] service unavailable');
    for (const n of [2, 3, 4, 5]) {
      expect(results[n - 1]!.content).toBe(`[TOOL_ERROR] service unavailable\n\n[tool-loop warning: flaky failed ${n} times with these same arguments. This looks like a loop: read the error and change your approach instead of retrying the call unchanged.]`);
    }
    const block = JSON.parse(results[5]!.content) as { error: string; guardrail: Record<string, unknown> };
    expect(block.guardrail).toEqual({ action: 'block', code: 'repeated_exact_failure_block', tool: 'flaky', count: 5 });
    expect(block.error).toMatch(/^Blocked flaky: the same call failed 5 times/);
    expect(results.map((m) => m.effectDisposition)).toEqual(['unknown', 'unknown', 'unknown', 'unknown', 'unknown', 'none']);
    // What the model was sent: the warning after the 2nd failure, the block result last.
    expect(requests[2]!.messages.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('[tool-loop warning: flaky failed 2 times') });
    expect(requests.at(-1)!.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 's5', content: results[5]!.content });
  });

  it('a model that keeps repeating a blocked call is stopped after 3 blocks in a row, even where nobody halts', async () => {
    const { a, reply, results, requests, ran } = await turn('stubborn', 'stubborn');
    expect(a.outcome).toBe('failed');
    expect(reply).toBe('I stopped: the model made 3 invalid, unknown or blocked tool calls in a row.');
    expect(ran).toBe(5);
    expect(requests).toHaveLength(8);
    expect(results.slice(5).map((m) => (JSON.parse(m.content) as { guardrail: { action: string } }).guardrail.action)).toEqual(['block', 'block', 'block']);
  });

  it('on a cron turn, halts at the 8th failure of the same tool and ends the turn with a clear message', async () => {
    const { a, reply, results, requests, ran } = await turn('cronjob', 'other args', 'cron');
    expect(a.outcome).toBe('failed');
    expect(reply).toBe('I stopped: flaky failed 8 times this turn, so the tool-loop guard ended this turn (same_tool_failure_halt). The last tool result shows the blocker; change the request or remove the blocker, then ask again.');
    expect(a.error).toBe('tool-loop guard ended the turn: same_tool_failure_halt (flaky, 8×)');
    expect(ran).toBe(8);
    expect(requests).toHaveLength(8);
    expect(results[2]!.content).toContain('[tool-loop warning: flaky failed 3 times this turn.');
    expect(results[7]!.content).toBe('[TOOL_ERROR] service unavailable\n\n[tool-loop halt: flaky failed 8 times this turn; the turn ends here.]');
  });

  it('on an attended platform, the same loop is only warned about (here it runs into the iteration budget)', async () => {
    const { a, reply, results, ran } = await turn('attended', 'other args', 'api', { maxIterations: 10 });
    expect(a.outcome).toBe('completed');
    expect(reply).toMatch(/stopped after 10 model calls/);
    expect(ran).toBe(10);
    expect(results[9]!.content).toContain('[tool-loop warning: flaky failed 10 times this turn.');
    expect(results.some((m) => m.content.includes('halt'))).toBe(false);
  });
});
