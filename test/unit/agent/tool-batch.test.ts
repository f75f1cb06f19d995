// Running a batch of tool calls (SPEC "The turn"): up to 8 at once, only read-only calls in
// parallel, everything else in order, a 420 s deadline on the injected clock, rate-limit
// failures marked so the loop guard skips them.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, MAX_PARALLEL, runTool, runToolBatch, TOOL_BATCH_TIMEOUT_MS, type Tool, type ToolCall, type ToolOutcome } from '../../../services/agent/index.js';
import { planSteps } from '../../../services/agent/tools/execute.js';
import { manualClock } from '../../integration/agent/manual-clock.js';

const tick = () => new Promise((r) => setImmediate(r));

function gatedTool(name: string, sideEffect: Tool['sideEffect'], stats: { running: number; max: number; started: string[] }, gate: Promise<void>): Tool {
  return defineTool({
    name, description: name, toolset: 'test', sideEffect, schema: z.object({ n: z.number() }).strict(),
    handler: async ({ n }) => {
      stats.started.push(`${name}${n}`);
      stats.running++;
      stats.max = Math.max(stats.max, stats.running);
      await gate;
      stats.running--;
      return `${name}${n}`;
    },
  });
}

const calls = (name: string, n: number, from = 0): ToolCall[] => Array.from({ length: n }, (_, i) => ({ id: `${name}${from + i}`, name, arguments: `{"n":${from + i}}` }));
const ctx = (signal = new AbortController().signal) => ({ sessionId: 's', signal, now: () => 0 });

describe('tool batch', () => {
  it('groups contiguous read-only calls into parallel steps; side-effecting calls run alone, in order', () => {
    const stats = { running: 0, max: 0, started: [] };
    const tools = new Map([['look', gatedTool('look', 'read-only', stats, Promise.resolve())], ['save', gatedTool('save', 'writes', stats, Promise.resolve())]]);
    const steps = planSteps(tools, [...calls('look', 2), ...calls('save', 2), ...calls('look', 3, 2), ...calls('nope', 1)]);
    expect(steps.map((s) => [s.parallel, s.calls.map((c) => c.id)])).toEqual([
      [true, ['look0', 'look1']], [false, ['save0']], [false, ['save1']], [true, ['look2', 'look3', 'look4']], [false, ['nope0']],
    ]);
  });

  it('runs at most 8 read-only calls at once and passes the results on in call order', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => { open = r; });
    const stats = { running: 0, max: 0, started: [] as string[] };
    const tools = new Map([['look', gatedTool('look', 'read-only', stats, gate)]]);
    const seen: string[] = [];
    const { clock, pending } = manualClock();
    const done = runToolBatch(tools, calls('look', 11), ctx(), { clock, onResult: async (o) => { seen.push(o.content); } });
    await tick();
    expect(stats.running).toBe(MAX_PARALLEL);
    expect(pending()).toBe(1); // one deadline for the whole parallel step
    open();
    const out = await done;
    expect(stats.max).toBe(8);
    expect(seen).toEqual(Array.from({ length: 11 }, (_, i) => `look${i}`));
    expect(out.every((o) => o.kind === 'ok' && o.disposition === 'none')).toBe(true);
    expect(pending()).toBe(0); // the deadline was cleared when the step ended
  });

  it('abandons the calls still running when the 420 s deadline passes; calls not started say so', async () => {
    const { clock, advance } = manualClock();
    const stats = { running: 0, max: 0, started: [] as string[] };
    const never = new Promise<void>(() => undefined);
    const tools = new Map([['look', gatedTool('look', 'read-only', stats, never)], ['save', gatedTool('save', 'writes', stats, never)]]);
    const seen: ToolOutcome[] = [];
    const done = runToolBatch(tools, [...calls('look', 9), ...calls('save', 1)], ctx(), { clock, onResult: async (o) => { seen.push(o); } });
    await tick();
    expect(stats.started).toHaveLength(8);
    advance(TOOL_BATCH_TIMEOUT_MS - 1);
    await tick();
    expect(seen).toEqual([]);
    advance(1);
    await tick();
    // The parallel step is over; the side-effecting call now runs under its own deadline.
    expect(seen).toHaveLength(9);
    expect(seen[0]).toMatchObject({ kind: 'timeout', disposition: 'none', content: 'timed out: look was still running when the tool batch deadline of 420 s passed; its result was not awaited.' });
    expect(seen[8]).toMatchObject({ kind: 'cancelled', disposition: 'none', content: 'cancelled: look was not started (the tool batch deadline of 420 s passed).' });
    expect(stats.started.at(-1)).toBe('save0');
    advance(TOOL_BATCH_TIMEOUT_MS);
    const out = await done;
    expect(out[9]).toMatchObject({ kind: 'timeout', disposition: 'unknown', content: 'timed out: save was still running when the tool batch deadline of 420 s passed; its result was not awaited and its effect is unknown.' });
  });

  it('marks failures that were rate limits (429) and returned error values as failures', async () => {
    const limited = defineTool({
      name: 'limited', description: '', toolset: 'test', sideEffect: 'read-only', schema: z.object({ how: z.string() }).strict(),
      handler: ({ how }) => {
        if (how === 'status') throw Object.assign(new Error('upstream refused'), { status: 429 });
        if (how === 'text') throw new Error('HTTP 429 Too Many Requests');
        if (how === 'value') return JSON.stringify({ error: 'not found' });
        throw new Error('disk full');
      },
    });
    const tools = new Map([['limited', limited]]);
    const run = (how: string) => runTool(tools, { id: how, name: 'limited', arguments: JSON.stringify({ how }) }, ctx());
    expect(await run('status')).toMatchObject({ kind: 'failed', rateLimited: true });
    expect(await run('text')).toMatchObject({ kind: 'failed', rateLimited: true });
    expect(await run('value')).toMatchObject({ kind: 'failed', content: '{"error":"not found"}' });
    expect((await run('value')).rateLimited).toBeUndefined();
    expect((await run('disk')).rateLimited).toBeUndefined();
  });
});
