// What the kanban_* tools reach (ToolContext.kanban): the board of the turn's scope — a dispatched
// turn's own task board, or the person's board — resolved per call from the admission id, never
// from the model's arguments. Every call is one transaction; a dispatched run's call is also its heartbeat.
import { KanbanError, touchRun, turnScope, type Db, type KanbanScope, type Sql } from '../../core/index.js';

export interface KanbanAccess {
  /** Runs `fn` in one transaction on the caller's board; a KanbanError says why nothing happened. */
  run<T>(fn: (sql: Sql, scope: KanbanScope) => Promise<T>, board?: string): Promise<T>;
  claimTtlSeconds: number;
}

export const NO_KANBAN_BOARD = 'No Kanban board is reachable here: the board belongs to a person, and this turn has none (or it is not a dispatched task).';

async function checkBoardName(sql: Sql, scope: KanbanScope, board: string | undefined): Promise<void> {
  if (board === undefined) return;
  const { rows } = await sql.query<{ name: string }>(`SELECT name FROM kanban_boards WHERE id = $1`, [scope.boardId]);
  const own = rows[0]?.name;
  if (board !== own && !(own?.startsWith('user:') && board === 'default')) {
    throw new KanbanError('forbidden', `This conversation reaches only its own board ("${own}"), not "${board}". Omit board.`);
  }
}

/** The Postgres KanbanAccess of one admission. */
export function pgKanbanAccess(db: Pick<Db, 'tx'>, adm: { id: string; agentId: string; userId: string | null }, opts: { claimTtlSeconds: number; now: () => number }): KanbanAccess {
  return {
    claimTtlSeconds: opts.claimTtlSeconds,
    run: (fn, board) => db.tx(async (sql) => {
      const scope = await turnScope(sql, adm);
      if (!scope) throw new KanbanError('forbidden', NO_KANBAN_BOARD);
      await checkBoardName(sql, scope, board);
      const out = await fn(sql, scope);
      if (scope.mode === 'worker') await touchRun(sql, scope.runId, new Date(opts.now()));
      return out;
    }),
  };
}
