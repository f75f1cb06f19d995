// The tool-loop guard's counting (SPEC "The turn"): same failing call warn 2 / block 5; same tool
// with different arguments warn 3 / halt 8 (hard halts only); identical (tool, args, result) 3× →
// notice; cycles of 2…4 calls; rate-limit failures not counted; a 64-call window; terminal-like
// tools only warned.
import { describe, expect, it } from 'vitest';
import { GUARD_DEFAULTS, haltReply, ToolLoopGuard, type GuardedTool } from '../../../services/agent/tools/guardrails.js';

const readOnly: GuardedTool = { sideEffect: 'read-only' };
const writes: GuardedTool = { sideEffect: 'writes' };
const terminal: GuardedTool = { sideEffect: 'external', terminalLike: true };
const call = (name: string, args = '{}') => ({ id: `${name}-${args}`, name, arguments: args });
const fail = (g: ToolLoopGuard, c = call('probe'), tool = readOnly) => g.after(c, tool, { content: '[TOOL_ERROR] disk full', failed: true });
const ok = (g: ToolLoopGuard, c: ReturnType<typeof call>, content = 'fine', tool = readOnly) => g.after(c, tool, { content, failed: false });

describe('tool-loop guard: the same failing call', () => {
  it('warns from the 2nd failure and blocks the call after the 5th, without halting by default', () => {
    const g = new ToolLoopGuard();
    const c = call('probe', '{"path":"/a","mode":1}');
    expect(fail(g, c)).toBe('');
    for (const n of [2, 3, 4, 5]) {
      expect(g.before(c, readOnly)).toBeUndefined();
      expect(fail(g, c)).toBe(`\n\n[tool-loop warning: probe failed ${n} times with these same arguments. This looks like a loop: read the error and change your approach instead of retrying the call unchanged.]`);
    }
    // The same arguments in another key order are the same call.
    const blocked = g.before(call('probe', '{"mode":1,"path":"/a"}'), readOnly);
    expect(JSON.parse(blocked!)).toEqual({
      error: 'Blocked probe: the same call failed 5 times with identical arguments, so it was not run again. Stop retrying it unchanged: change your approach or explain the blocker.',
      guardrail: { action: 'block', code: 'repeated_exact_failure_block', tool: 'probe', count: 5 },
    });
    expect(g.halt).toBeUndefined();
    // Other arguments are another call: not blocked.
    expect(g.before(call('probe', '{"path":"/b"}'), readOnly)).toBeUndefined();
  });

  it('with hard halts on, a block also ends the turn', () => {
    const g = new ToolLoopGuard({ hardHalt: true });
    for (let i = 0; i < 5; i++) fail(g);
    expect(g.halt).toBeUndefined();
    expect(g.before(call('probe'), readOnly)).toContain('Blocked probe');
    expect(g.halt).toEqual({ code: 'repeated_exact_failure_block', tool: 'probe', count: 5, reason: 'probe failed 5 times with the same arguments' });
    expect(haltReply(g.halt!, '')).toBe('I stopped: probe failed 5 times with the same arguments, so the tool-loop guard ended this turn (repeated_exact_failure_block). The last tool result shows the blocker; change the request or remove the blocker, then ask again.');
  });

  it('starts counting again after the call succeeds, or after any side-effecting call succeeds', () => {
    const g = new ToolLoopGuard();
    for (let i = 0; i < 4; i++) fail(g);
    ok(g, call('probe'));
    expect(fail(g)).toBe('');
    fail(g);
    ok(g, call('save', '{"x":1}'), 'saved', writes); // progress: the next retry is a new attempt
    expect(g.before(call('probe'), readOnly)).toBeUndefined();
    expect(fail(g)).toBe('');
  });
});

describe('tool-loop guard: the same tool with different arguments', () => {
  const failN = (g: ToolLoopGuard, n: number) => Array.from({ length: n }, (_, i) => fail(g, call('search', `{"q":${i}}`)));

  it('warns from the 3rd failure and never halts while hard halts are off', () => {
    const out = failN(new ToolLoopGuard(), 12);
    expect(out.slice(0, 2)).toEqual(['', '']);
    expect(out[2]).toContain('[tool-loop warning: search failed 3 times this turn. Diagnose before retrying');
    expect(out[7]).toContain('search failed 8 times this turn. Diagnose');
    expect(out.join('')).not.toContain('halt');
  });

  it('halts at the 8th failure when hard halts are on', () => {
    const g = new ToolLoopGuard({ hardHalt: true });
    const out = failN(g, 7);
    expect(out[6]).toContain('warning');
    expect(g.halt).toBeUndefined();
    expect(fail(g, call('search', '{"q":"eighth"}'))).toBe('\n\n[tool-loop halt: search failed 8 times this turn; the turn ends here.]');
    expect(g.halt).toMatchObject({ code: 'same_tool_failure_halt', tool: 'search', count: 8 });
  });

  it('does not count failures that were rate limits (429)', () => {
    const g = new ToolLoopGuard({ hardHalt: true });
    for (let i = 0; i < 12; i++) expect(g.after(call('search', `{"q":${i}}`), readOnly, { content: '[TOOL_ERROR] 429 Too Many Requests', failed: true, rateLimited: true })).toBe('');
    for (let i = 0; i < 6; i++) expect(g.after(call('search'), readOnly, { content: '[TOOL_ERROR] 429', failed: true, rateLimited: true })).toBe('');
    expect(g.before(call('search'), readOnly)).toBeUndefined();
    expect(fail(g, call('search'))).toBe('');
    expect(g.halt).toBeUndefined();
  });

  it('only warns about terminal-like tools: no block, no halt', () => {
    const g = new ToolLoopGuard({ hardHalt: true });
    const cmd = call('terminal', '{"command":"make test"}');
    for (let i = 0; i < 9; i++) {
      expect(g.before(cmd, terminal)).toBeUndefined();
      expect(fail(g, cmd, terminal)).toContain(i === 0 ? '' : `terminal failed ${i + 1} times with these same arguments`);
    }
    for (let i = 0; i < 9; i++) expect(fail(g, call('terminal', `{"command":"try ${i}"}`), terminal)).toContain('warning');
    expect(g.halt).toBeUndefined();
  });
});

describe('tool-loop guard: repetition', () => {
  it('gives a notice from the 3rd identical (tool, arguments, result) in a row; a new result starts over', () => {
    const g = new ToolLoopGuard();
    const c = call('read', '{"path":"notes"}');
    expect([ok(g, c), ok(g, c)]).toEqual(['', '']);
    expect(ok(g, c)).toBe('\n\n[tool-loop notice: this is the 3rd identical call to read in a row, with the same arguments and the same result. Do not repeat it: change the arguments, use another tool, or go on with what you have.]');
    expect(ok(g, c, 'changed')).toBe('');
    expect(ok(g, c, 'changed')).toBe('');
    expect(ok(g, c, 'changed')).toContain('3rd identical call');
    expect(g.halt).toBeUndefined();
  });

  it('with hard halts on, halts at the 5th identical call', () => {
    const g = new ToolLoopGuard({ hardHalt: true });
    const c = call('read');
    for (let i = 0; i < 4; i++) ok(g, c);
    expect(g.halt).toBeUndefined();
    expect(ok(g, c)).toContain('[tool-loop halt: this is the 5th identical call to read in a row');
    expect(g.halt).toMatchObject({ code: 'identical_call_streak_halt', count: 5 });
  });

  it.each([2, 3, 4])('recognises a cycle of %i calls repeated 3 times', (period) => {
    const g = new ToolLoopGuard();
    const lap = Array.from({ length: period }, (_, i) => call(`tool${i}`, `{"i":${i}}`));
    const out = [...lap, ...lap, ...lap].map((c) => ok(g, c));
    expect(out.slice(0, -1).every((s) => s === '')).toBe(true);
    expect(out.at(-1)).toBe(`\n\n[tool-loop notice: the last 3 rounds repeated the same cycle of ${period} tool calls (ending with tool${period - 1}) with identical arguments and identical results. Do not repeat it: change the arguments, use another tool, or go on with what you have.]`);
  });

  it('does not call a cycle of 5 calls a loop, nor a cycle whose results change', () => {
    const g = new ToolLoopGuard();
    const lap = Array.from({ length: 5 }, (_, i) => call(`tool${i}`));
    expect([...lap, ...lap, ...lap].map((c) => ok(g, c)).join('')).toBe('');
    const h = new ToolLoopGuard();
    const two = [call('a'), call('b')];
    expect([0, 1, 2].flatMap((n) => two.map((c) => ok(h, c, `round ${n}`))).join('')).toBe('');
  });
});

describe('tool-loop guard: the window', () => {
  it('remembers the last 64 calls: a failure 63 calls back still counts, one 64 back does not', () => {
    expect(GUARD_DEFAULTS.window).toBe(64);
    const run = (between: number) => {
      const g = new ToolLoopGuard();
      fail(g);
      for (let i = 0; i < between; i++) ok(g, call('other', `{"i":${i}}`));
      return fail(g);
    };
    expect(run(62)).toContain('probe failed 2 times');
    expect(run(63)).toBe('');
  });
});
