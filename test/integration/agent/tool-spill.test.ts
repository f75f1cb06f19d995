// Spill-over storage of oversized tool results inside the real worker (Postgres, Redis, the fake
// model behind the openai SDK): the full text is stored, the model sees a preview block naming
// its id and reads the rest back with read_tool_result — from its own session only. Reads never
// spill, and a result that cannot be stored is cut with a notice instead of failing the turn.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { listTranscript, sweepOnce } from '../../../services/core/index.js';
import { builtinRegistry, defineTool, READ_TOOL_RESULT, truncateResult } from '../../../services/agent/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type ChatRequestBody, type FakeOpenAI, type Script } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, runTurn, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { recordingClock } from './helpers.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;

/** `chars` characters in which every position is distinguishable: "A0;A1;A2;…". */
function bulk(seed: string, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const part = `${seed}${i};`;
    parts.push(part);
    length += part.length;
  }
  return parts.join('').slice(0, chars);
}

const dump = defineTool({
  name: 'dump', description: 'Returns a large text.', toolset: 'test', sideEffect: 'read-only',
  schema: z.object({ seed: z.string(), chars: z.number().int() }).strict(),
  handler: ({ seed, chars }) => bulk(seed, chars),
});
// Over the per-result cap; the test makes Postgres refuse storing it, so only the first 100 000 characters are kept.
const POISON = `${'p'.repeat(100_500)}${'q'.repeat(1_000)}`;
const poison = defineTool({
  name: 'poison', description: 'Returns a result whose store the test makes Postgres refuse.', toolset: 'test', sideEffect: 'read-only',
  schema: z.object({}).strict(),
  handler: () => POISON,
});

const STORED_ID = /stored in full as id ([0-9a-f-]{36})/;
const dumpCall = (id: string, seed: string, chars: number) => ({ id, name: 'dump', arguments: JSON.stringify({ seed, chars }) });
const readCall = (id: string, args: Record<string, unknown>) => ({ id, name: READ_TOOL_RESULT, arguments: JSON.stringify(args) });
const toolMessages = (b: ChatRequestBody) => b.messages.filter((m) => m.role === 'tool');
const storedIdIn = (b: ChatRequestBody) => toolMessages(b).map((m) => STORED_ID.exec(m.content)?.[1]).find(Boolean);

// The scripted model: the user's message names the plan; tool results move it along.
const plans: Record<string, (b: ChatRequestBody, results: number) => Script> = {
  // One 250 000-character result, then one page of it from offset 123 456.
  'dump and read': (b, results) => results === 0 ? { toolCalls: [dumpCall('d1', 'A', 250_000)] }
    : results === 1 ? { toolCalls: [readCall('r1', { id: storedIdIn(b), offset: 123_456, limit: 5_000 })] }
      : { text: 'read done' },
  // Three 90 000-character results in one step: the third does not fit 200 000 per turn.
  'three dumps': (_b, results) => results === 0 ? { toolCalls: ['A', 'B', 'C'].map((s, i) => dumpCall(`t${i}`, s, 90_000)) } : { text: 'three done' },
  // Spill one result, use up the turn's budget with two more, then read a full page of the first.
  'read past the budget': (b, results) => results === 0 ? { toolCalls: [dumpCall('d1', 'Z', 250_000)] }
    : results === 1 ? { toolCalls: [dumpCall('d2', 'X', 90_000), dumpCall('d3', 'Y', 90_000)] }
      : results === 3 ? { toolCalls: [readCall('r1', { id: storedIdIn(b), offset: 1_000, limit: 50_000 })] }
        : { text: 'budget done' },
  'poison': (_b, results) => results === 0 ? { toolCalls: [{ id: 'p1', name: 'poison', arguments: '{}' }] } : { text: 'poison done' },
};
function script(b: ChatRequestBody): Script {
  const user = lastUser(b);
  const foreign = /^read (\S+)$/.exec(user);
  const results = toolMessages(b).length;
  if (foreign) {
    // Another session's id, and an id nobody stored.
    return results === 0 ? { toolCalls: [readCall('f1', { id: foreign[1] }), readCall('f2', { id: '00000000-0000-4000-8000-000000000000' })] } : { text: 'foreign done' };
  }
  return plans[user]?.(b, results) ?? { text: 'no plan' };
}

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url));
  worker = await startTestWorker(rt, { loop: { clock: recordingClock(), tools: builtinRegistry().register(dump).register(poison) } });
});
afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

interface SpillRow { id: string; session_id: string; admission_id: string; tool_call_id: string; tool_name: string; content: string; size: number }
const spillsOf = async (sessionId: string) =>
  (await rt.db.pool.query<SpillRow>(`SELECT * FROM tool_result_spills WHERE session_id = $1 ORDER BY created_at`, [sessionId])).rows;

let agents = 0;
async function turn(content: string, user = 'u1') {
  const name = `spill${++agents}`;
  const agentId = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name }, toolsets: ['test'] });
  const { a, reply } = await runTurn(rt, { agentId, sessionKey: `agent:default/${name}:api:dm:${user}`, content, userId: user });
  const transcript = await listTranscript(rt.db.pool, a.sessionId);
  return { a, reply, results: transcript.filter((m) => m.role === 'tool'), requests: model.requests.filter((r) => lastUser(r.body) === content).map((r) => r.body) };
}

describe('spill-over storage of tool results', () => {
  it('stores a result over 100 000 characters in full, previews it with its id, and serves the exact slice the model asks for', async () => {
    const original = bulk('A', 250_000);
    const { a, reply, results, requests } = await turn('dump and read');
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('read done');

    const [row, ...others] = await spillsOf(a.sessionId);
    expect(others).toEqual([]); // the read itself was not stored
    expect(row).toMatchObject({ admission_id: a.id, tool_call_id: 'd1', tool_name: 'dump', size: 250_000 });
    expect(row!.content === original).toBe(true);

    // What the transcript keeps is what the model was sent: the preview block, not the result.
    const preview = results[0]!.content;
    expect(preview).toMatch(/^<tool-result-preview>\nThis dump result had 250,000 characters, more than one tool result may have \(100,000\)\. It was stored in full as id /);
    expect(STORED_ID.exec(preview)?.[1]).toBe(row!.id);
    expect(preview).toContain(`${READ_TOOL_RESULT} {"id": "${row!.id}", "offset": 1500}`);
    expect(preview).toContain(`<preview>\n${original.slice(0, 1_500)}\n</preview>`);
    expect(preview.length).toBeLessThan(2_500);
    expect(toolMessages(requests[1]!).map((m) => m.content)).toEqual([preview]);
    expect(requests[1]!.tools!.map((t) => t.function.name)).toEqual(['dump', 'poison', READ_TOOL_RESULT]);

    // The page: a header, then exactly characters 123 456–128 456 of the original.
    const page = results[1]!.content;
    const header = `[stored result ${row!.id} of dump: characters 123456–128456 of 250000; 121544 more, continue with "offset": 128456]\n`;
    expect(page.startsWith(header)).toBe(true);
    expect(page.slice(header.length) === original.slice(123_456, 128_456)).toBe(true);
    expect(results[1]!.toolCallId).toBe('r1');
    expect(toolMessages(requests[2]!).at(-1)!.content).toBe(page);
  });

  it('stores the result that would take the turn past 200 000 characters, and keeps the ones that fit', async () => {
    const { a, results } = await turn('three dumps');
    expect(a.outcome).toBe('completed');
    expect(results.slice(0, 2).map((m) => m.content === bulk(m.toolCallId === 't0' ? 'A' : 'B', 90_000))).toEqual([true, true]);
    const rows = await spillsOf(a.sessionId);
    expect(rows.map((r) => [r.tool_call_id, r.size])).toEqual([['t2', 90_000]]);
    expect(rows[0]!.content === bulk('C', 90_000)).toBe(true);
    expect(results[2]!.content).toMatch(new RegExp(`^<tool-result-preview>\\nThis dump result had 90,000 characters, more than this turn's tool-output budget has left \\(200,000 characters per turn, 180,000 already used\\)\\. It was stored in full as id ${rows[0]!.id}\\.`));
  });

  it('refuses to read a result stored by another session, and says so', async () => {
    const owner = await turn('dump and read', 'owner');
    const [row] = await spillsOf(owner.a.sessionId);
    const other = await turn(`read ${row!.id}`, 'intruder');
    expect(other.a.outcome).toBe('completed');
    expect(other.results.map((m) => JSON.parse(m.content) as unknown)).toEqual([
      { error: `Stored result ${row!.id} belongs to another session; only results stored in this session can be read.` },
      { error: 'No stored result 00000000-0000-4000-8000-000000000000 in this session; use the id from a <tool-result-preview> block of this conversation.' },
    ]);
    expect(other.results.map((m) => m.effectDisposition)).toEqual(['none', 'none']);
    const sent = other.requests.at(-1)!.messages.map((m) => m.content).join('\n');
    expect(sent).not.toContain(row!.content.slice(1_500, 1_600));
  });

  it('never spills a read_tool_result page, even past the turn budget', async () => {
    const { a, results } = await turn('read past the budget');
    expect(a.outcome).toBe('completed');
    expect(results.slice(1, 3).map((m) => m.content.length)).toEqual([90_000, 90_000]); // the budget is used up
    const rows = await spillsOf(a.sessionId);
    expect(rows.map((r) => r.tool_name)).toEqual(['dump']);
    const page = results[3]!.content;
    expect(page).not.toContain('<tool-result-preview>');
    expect(page.slice(page.indexOf('\n') + 1) === bulk('Z', 250_000).slice(1_000, 51_000)).toBe(true);
  });

  it('cuts a result it cannot store with the notice and finishes the turn', async () => {
    // Postgres refuses this one row (as it would a full disk or a constraint): storing fails for real.
    await rt.db.pool.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF NEW.tool_name = 'poison' THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$`);
    await rt.db.pool.query(`CREATE TRIGGER refuse_poison BEFORE INSERT ON tool_result_spills FOR EACH ROW EXECUTE FUNCTION refuse_poison()`);
    const { a, reply, results, requests } = await turn('poison');
    expect(a.outcome).toBe('completed');
    expect(requests[0]!.tools!.map((t) => t.function.name)).toContain(READ_TOOL_RESULT); // the turn had a store: storing failed
    expect(reply).toBe('poison done');
    expect(await spillsOf(a.sessionId)).toEqual([]);
    expect(results[0]!.content === truncateResult(POISON)).toBe(true);
    expect(results[0]!.content).toMatch(/\n\[truncated: the result had 101,500 characters; the first 100,000 are shown and 1,500 were cut \(not stored\)\./);
  });

  it('removes stored results with their session', async () => {
    const { a } = await turn('three dumps', 'leaver');
    expect(await spillsOf(a.sessionId)).toHaveLength(1);
    await rt.db.pool.query(`DELETE FROM sessions WHERE id = $1`, [a.sessionId]);
    expect(await spillsOf(a.sessionId)).toEqual([]);
  });

  it('lets the sweeper delete stored results past their retention (24 h by default), and keeps younger ones', async () => {
    const old = await turn('three dumps', 'aging');
    const young = await turn('three dumps', 'fresh');
    await rt.db.pool.query(`UPDATE tool_result_spills SET created_at = now() - interval '25 hours' WHERE session_id = $1`, [old.a.sessionId]);
    // This sweep, or the worker's own sweeper running beside it, deletes the old one.
    await eventually(async () => {
      await sweepOnce(rt.db, rt.queues, rt.config);
      return (await spillsOf(old.a.sessionId)).length === 0 ? true : undefined;
    }, 'the old stored result to be pruned');
    expect(await spillsOf(young.a.sessionId)).toHaveLength(1);
  });
});
