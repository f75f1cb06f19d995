// The todo tool on real Postgres: two "workers" (two stores on two pools) see one list, a restart
// (a new pool) keeps it, concurrent merges lose nothing, and Hermes' semantics hold (replace,
// merge by id, one in_progress lifted ahead, revision on change only).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, openDb, publishRevision, type Db } from '../../../services/core/index.js';
import { applyTodos, pgTodoStore, todoTool, type TodoStore } from '../../../services/agent/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';
import { testAgent } from '../../support/system.js';
import { callJson, toolContext } from './helpers.js';

let database: TestDatabase;
let workerA: Db;
let workerB: Db;
let agentId: string;
let n = 0;

async function newSession(): Promise<string> {
  return (await admit(workerA, { agentId, platform: 'api', sessionKey: `todo-${n++}`, user: { platformUserId: 'u' }, content: 'hi' })).sessionId;
}

const todo = (store: TodoStore, sessionId: string, args: unknown) => callJson(todoTool, args, toolContext({ sessionId, todos: store }));

beforeAll(async () => {
  database = await createTestDatabase();
  workerA = openDb(database.url);
  workerB = openDb(database.url);
  agentId = (await publishRevision(workerA, testAgent('http://127.0.0.1:1/v1'))).agentId;
});
afterAll(async () => {
  await workerA?.close();
  await workerB?.close();
  await database?.drop();
});

describe('todo', () => {
  it('is the same list on two workers, and survives a restart', async () => {
    const session = await newSession();
    const written = await todo(pgTodoStore(workerA), session, { todos: [{ id: '1', content: 'plan', status: 'completed' }, { id: '2', content: 'build', status: 'in_progress' }] });
    expect(written).toMatchObject({ revision: 1, summary: { total: 2, completed: 1, in_progress: 1 } });
    expect(await todo(pgTodoStore(workerB), session, {})).toEqual(written);
    await workerB.close();
    workerB = openDb(database.url); // the worker restarted
    const again = await todo(pgTodoStore(workerB), session, {});
    expect(again.todos).toEqual([{ id: '1', content: 'plan', status: 'completed' }, { id: '2', content: 'build', status: 'in_progress' }]);
  });

  it('keeps sessions apart', async () => {
    const [s1, s2] = [await newSession(), await newSession()];
    await todo(pgTodoStore(workerA), s1, { todos: [{ id: 'a', content: 'only mine', status: 'pending' }] });
    expect(await todo(pgTodoStore(workerA), s2, {})).toMatchObject({ todos: [], revision: 0 });
  });

  it('loses nothing when two workers merge at the same time', async () => {
    const session = await newSession();
    const stores = [pgTodoStore(workerA), pgTodoStore(workerB)];
    await Promise.all(Array.from({ length: 20 }, (_, i) => todo(stores[i % 2]!, session, { todos: [{ id: `t${i}`, content: `task ${i}`, status: 'pending' }], merge: true })));
    const list = await todo(stores[0]!, session, {});
    expect((list.todos as { id: string }[]).map((t) => t.id).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `t${i}`).sort());
    expect(list.revision).toBe(20);
  });

  it("follows Hermes' rules: replace, merge by id, in_progress first, revision only on change", () => {
    const start = applyTodos({ todos: [], revision: 0 }, [{ id: 'a', content: 'A', status: 'pending' }, { id: 'b', content: 'B', status: 'pending' }], false);
    const merged = applyTodos(start, [{ id: 'b', status: 'in_progress' }, { id: 'c', content: 'C', status: 'bogus' }], true);
    expect(merged.todos).toEqual([{ id: 'b', content: 'B', status: 'in_progress' }, { id: 'a', content: 'A', status: 'pending' }, { id: 'c', content: 'C', status: 'pending' }]);
    expect(merged.revision).toBe(2);
    expect(applyTodos(merged, [{ id: 'b', status: 'in_progress' }], true).revision).toBe(2);
    expect(applyTodos(merged, [{ id: 'z', content: 'fresh', status: 'pending' }], false).todos).toEqual([{ id: 'z', content: 'fresh', status: 'pending' }]);
    const dupes = applyTodos({ todos: [], revision: 0 }, [{ id: 'x', content: 'first', status: 'pending' }, { id: 'x', content: 'last', status: 'completed' }], false);
    expect(dupes.todos).toEqual([{ id: 'x', content: 'last', status: 'completed' }]);
    const nested = applyTodos({ todos: [], revision: 0 }, [{ id: 'p', content: 'P', status: 'pending' }, { id: 'k', content: 'K', status: 'pending', parent: 'p' }, { id: 'o', content: 'O', status: 'pending', parent: 'missing' }], false);
    expect(nested.todos).toEqual([{ id: 'p', content: 'P', status: 'pending' }, { id: 'k', content: 'K', status: 'pending', parent: 'p' }, { id: 'o', content: 'O', status: 'pending' }]);
    expect(applyTodos({ todos: [], revision: 0 }, [{ id: '1', content: 'x'.repeat(5_000), status: 'pending' }], false).todos[0]!.content).toHaveLength(4_000);
  });

  it('goes with its session when the session is deleted', async () => {
    const session = await newSession();
    await todo(pgTodoStore(workerA), session, { todos: [{ id: '1', content: 'x', status: 'pending' }] });
    await workerA.pool.query('DELETE FROM sessions WHERE id = $1', [session]);
    const { rows } = await workerA.pool.query('SELECT 1 FROM session_todos WHERE session_id = $1', [session]);
    expect(rows).toEqual([]);
  });

  it('refuses a NUL or a lone surrogate by name, and the list stays as it was', async () => {
    // Through the message API these answered the model Postgres' own words ("[TOOL_ERROR]
    // unsupported Unicode escape sequence", "invalid input syntax for type json").
    const session = await newSession();
    const store = pgTodoStore(workerA);
    await todo(store, session, { todos: [{ id: '1', content: 'plan', status: 'pending' }] });
    const { call } = await import('./helpers.js');
    for (const [args, where] of [
      [{ todos: [{ id: '2', content: 'a\u0000b', status: 'pending' }] }, 'todos.0.content contains a NUL'],
      [{ todos: [{ id: 'x\ud800', content: 'b', status: 'pending' }], merge: true }, 'todos.0.id contains an unpaired UTF-16 surrogate'],
    ] as const) {
      const out = await call(todoTool, args, toolContext({ sessionId: session, todos: store }));
      expect(out.kind).toBe('invalid');
      expect(out.content).toContain(where);
    }
    expect(await todo(store, session, {})).toMatchObject({ revision: 1, todos: [{ id: '1', content: 'plan' }] });
  });

  it('refuses the old {action} arguments and works only with a store', async () => {
    const session = await newSession();
    const old = await import('./helpers.js').then((h) => h.call(todoTool, { action: 'add', text: 'x' }, toolContext({ sessionId: session, todos: pgTodoStore(workerA) })));
    expect(old.kind).toBe('invalid');
    expect((await callJson(todoTool, {}, toolContext({ sessionId: session }))).error).toMatch(/no todo store/);
  });
});
