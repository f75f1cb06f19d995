// The todo list in Postgres (`session_todos`: one row per session, the list as JSON and its
// revision), so every worker of the agent sees the same list and a restart keeps it. A write
// locks the session's row (FOR UPDATE) for its read-modify-write: two workers writing at once
// apply one after the other, neither loses the other's items.
import type { Db, Sql } from '../../core/index.js';
import { applyTodos, type TodoInput, type TodoItem, type TodoList, type TodoStore } from './todo-list.js';

interface Row { items: TodoItem[]; revision: number }

const EMPTY: TodoList = { todos: [], revision: 0 };

async function lockedRow(sql: Sql, sessionId: string): Promise<TodoList> {
  await sql.query(`INSERT INTO session_todos (session_id) VALUES ($1) ON CONFLICT (session_id) DO NOTHING`, [sessionId]);
  const { rows } = await sql.query<Row>(`SELECT items, revision FROM session_todos WHERE session_id = $1 FOR UPDATE`, [sessionId]);
  const row = rows[0];
  return row ? { todos: row.items, revision: row.revision } : EMPTY;
}

/** The Postgres TodoStore (ToolContext.todos) over the process's pool. */
export function pgTodoStore(db: Pick<Db, 'pool' | 'tx'>): TodoStore {
  return {
    async read(sessionId) {
      const { rows } = await db.pool.query<Row>(`SELECT items, revision FROM session_todos WHERE session_id = $1`, [sessionId]);
      const row = rows[0];
      return row ? { todos: row.items, revision: row.revision } : EMPTY;
    },
    write(sessionId, todos: TodoInput[], merge) {
      return db.tx(async (sql) => {
        const current = await lockedRow(sql, sessionId);
        const next = applyTodos(current, todos, merge);
        if (next.revision !== current.revision) {
          await sql.query(`UPDATE session_todos SET items = $2::jsonb, revision = $3, updated_at = CURRENT_TIMESTAMP WHERE session_id = $1`, [sessionId, JSON.stringify(next.todos), next.revision]);
        }
        return next;
      });
    },
  };
}
