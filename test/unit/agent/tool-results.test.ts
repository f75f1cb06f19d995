// Tool result limits: 100 000 characters per result, 200 000 per turn, 1 500-character previews.
// With a store, a result over either limit is stored and replaced by a block naming its id; without
// one (or when storing fails) it is cut with a notice. `read_file` and `read_tool_result` never spill.
import { describe, expect, it } from 'vitest';
import {
  MAX_RESULT_CHARS, MAX_TURN_RESULT_CHARS, PREVIEW_CHARS, previewBlock, previewOf, READ_TOOL_RESULT, ResultBudget, runTool, readToolResultTool, truncateResult,
  type StoredResultPage, type ToolResultStore,
} from '../../../services/agent/index.js';

/** An in-memory store; `fail` makes every save throw (a database that refuses the row). */
function memoryStore(fail = false): ToolResultStore & { saved: Map<string, { toolCallId: string; toolName: string; content: string }> } {
  const saved = new Map<string, { toolCallId: string; toolName: string; content: string }>();
  return {
    saved,
    save: async (r) => {
      if (fail) throw new Error('connection refused');
      const id = `00000000-0000-4000-8000-${String(saved.size + 1).padStart(12, '0')}`;
      saved.set(id, r);
      return id;
    },
    read: async (id, offset, limit): Promise<StoredResultPage> => {
      const r = saved.get(id);
      return r ? { ok: true, toolName: r.toolName, size: r.content.length, offset, text: r.content.slice(offset, offset + limit) } : { ok: false, reason: 'not_found' };
    },
  };
}
const call = (name: string, id = 'c1') => ({ id, name });

describe('tool result limits without a store', () => {
  it('truncates a result over 100 000 characters and says how much was cut', async () => {
    const out = truncateResult('x'.repeat(MAX_RESULT_CHARS + 5_000));
    expect(out.startsWith('x'.repeat(MAX_RESULT_CHARS) + '\n[truncated: the result had 105,000 characters')).toBe(true);
    expect(out).toContain('5,000 were cut (not stored)');
    expect(truncateResult('short')).toBe('short');
    expect(await new ResultBudget().fit(call('search'), 'x'.repeat(MAX_RESULT_CHARS + 5_000))).toBe(out);
  });

  it('keeps the turn within 200 000 characters: a result that does not fit becomes a preview block', async () => {
    const budget = new ResultBudget();
    const a = 'a'.repeat(90_000);
    expect(await budget.fit(call('search'), a)).toBe(a);
    expect(await budget.fit(call('search'), a)).toBe(a);
    const third = await budget.fit(call('search'), 'c'.repeat(90_000));
    expect(third).toBe(previewBlock('c'.repeat(90_000), 180_000));
    expect(third).toMatch(/^<tool-result-preview>\nThis result had 90,000 characters, more than this turn's tool-output budget has left \(200,000 characters per turn, 180,000 already used\)\./);
    expect(third).toContain(`<preview>\n${'c'.repeat(PREVIEW_CHARS)}\n</preview>`);
    expect(third).toContain('88,500 were cut and not stored');
    expect(third.length).toBeLessThan(PREVIEW_CHARS + 600);
    // Small results always fit; read_file is never replaced by a preview.
    expect(await budget.fit(call('search'), 'tiny')).toBe('tiny');
    const file = 'f'.repeat(50_000);
    expect(await budget.fit(call('read_file'), file)).toBe(file);
    expect(budget.spent).toBeGreaterThan(MAX_TURN_RESULT_CHARS);
  });
});

describe('tool result limits with a store', () => {
  it('stores a result over 100 000 characters in full and sends a block with its id, sizes and how to read on', async () => {
    const store = memoryStore();
    const big = 'y'.repeat(150_000);
    const out = await new ResultBudget(store).fit(call('search', 'call-7'), big);
    const [id, row] = [...store.saved][0]!;
    expect(row).toEqual({ toolCallId: 'call-7', toolName: 'search', content: big });
    expect(out.split('\n').slice(0, 3)).toEqual([
      '<tool-result-preview>',
      `This search result had 150,000 characters, more than one tool result may have (100,000). It was stored in full as id ${id}.`,
      `The first 1,500 characters are shown. Read the rest with ${READ_TOOL_RESULT} {"id": "${id}", "offset": 1500} (up to 50,000 characters a call with "limit"); do not run search again for the same output.`,
    ]);
    expect(out).toContain(`<preview>\n${'y'.repeat(PREVIEW_CHARS)}\n</preview>\n</tool-result-preview>`);
  });

  it('stores the result that does not fit the turn budget; what fits and small results go through', async () => {
    const store = memoryStore();
    const budget = new ResultBudget(store);
    const a = 'a'.repeat(90_000);
    expect(await budget.fit(call('search', 'a'), a)).toBe(a);
    expect(await budget.fit(call('search', 'b'), a)).toBe(a);
    const third = await budget.fit(call('search', 'c'), 'c'.repeat(90_000));
    expect([...store.saved.values()].map((r) => [r.toolCallId, r.content.length])).toEqual([['c', 90_000]]);
    expect(third).toMatch(/^<tool-result-preview>\nThis search result had 90,000 characters, more than this turn's tool-output budget has left \(200,000 characters per turn, 180,000 already used\)\. It was stored in full as id /);
    expect(await budget.fit(call('search'), 'tiny')).toBe('tiny');
    expect(budget.spent).toBe(180_000 + third.length + 4);
  });

  it('never stores read_file or read_tool_result results: read_file only gets the per-result cut', async () => {
    const store = memoryStore();
    const budget = new ResultBudget(store);
    await budget.fit(call('search'), 'a'.repeat(99_000));
    await budget.fit(call('search'), 'b'.repeat(99_000));
    const page = 'p'.repeat(50_000);
    expect(await budget.fit(call(READ_TOOL_RESULT), page)).toBe(page);
    expect(await budget.fit(call('read_file'), 'f'.repeat(120_000))).toBe(truncateResult('f'.repeat(120_000)));
    expect(store.saved.size).toBe(0);
  });

  it('falls back to the cut-with-notice texts when storing fails', async () => {
    const budget = new ResultBudget(memoryStore(true));
    const big = 'y'.repeat(150_000);
    expect(await budget.fit(call('search'), big)).toBe(truncateResult(big));
    // 100 000 + notice used: the next 99 999 do not fit and are previewed, not stored.
    const next = 'n'.repeat(99_999);
    expect(await budget.fit(call('search'), next)).toBe(previewBlock(next, truncateResult(big).length));
  });

  it('cuts a preview after a line break in its second half', () => {
    const text = `${'a'.repeat(1_000)}\n${'b'.repeat(1_000)}`;
    expect(previewOf(text)).toBe(`${'a'.repeat(1_000)}\n`);
    expect(previewOf(`${'a'.repeat(100)}\n${'b'.repeat(3_000)}`)).toHaveLength(PREVIEW_CHARS);
    expect(previewOf('short')).toBe('short');
  });
});

describe('read_tool_result', () => {
  const ctx = (storedResults?: ToolResultStore) => ({ sessionId: 's', signal: new AbortController().signal, now: () => 0, ...(storedResults ? { storedResults } : {}) });
  const tools = new Map([[READ_TOOL_RESULT, readToolResultTool]]);
  const read = (args: Record<string, unknown>, store?: ToolResultStore) => runTool(tools, { id: 'r', name: READ_TOOL_RESULT, arguments: JSON.stringify(args) }, ctx(store));

  it('returns a header and the exact page; offsets past the end and pages over 50 000 characters are refused', async () => {
    const store = memoryStore();
    const id = await store.save({ toolCallId: 'c', toolName: 'search', content: 'abcdefghij' });
    expect((await read({ id, offset: 2, limit: 3 }, store)).content).toBe(`[stored result ${id} of search: characters 2–5 of 10; 5 more, continue with "offset": 5]\ncde`);
    expect((await read({ id, offset: 8 }, store)).content).toBe(`[stored result ${id} of search: characters 8–10 of 10; this is the end]\nij`);
    expect(await read({ id, offset: 10 }, store)).toMatchObject({ kind: 'failed', content: `{"error":"offset 10 is past the end of stored result ${id} (10 characters)."}` });
    expect(await read({ id, limit: 50_001 }, store)).toMatchObject({ kind: 'invalid' });
    expect(await read({ id }, undefined)).toMatchObject({ kind: 'failed', content: '{"error":"Stored tool results cannot be read here."}' });
  });
});
