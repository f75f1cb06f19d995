// Boards and the caller's scope. A board belongs to one agent (so to its namespace). A person's
// board (`user:<user id>`, created on first use) is what chat and that person's turns reach; named
// boards (slugs) are operator boards, reached through the admin API and the CLI only. A dispatched
// turn reaches the board of the task it runs, found by its admission id — never by anything the
// model or the message says.
import type { Sql } from '../db.js';
import { KanbanError, type KanbanScope } from './types.js';

export const BOARD_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const DEFAULT_BOARD = 'default';

export interface KanbanBoard { id: string; agentId: string; namespace: string; agent: string; name: string; ownerUserId: string | null }

const boardColumns = `b.id, b.agent_id AS "agentId", a.namespace, a.name AS agent, b.name, b.owner_user_id AS "ownerUserId"`;

/** The board of one person on one agent, created on first use. */
export async function personalBoard(sql: Sql, agentId: string, userId: string): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO kanban_boards (id, agent_id, name, owner_user_id) VALUES (gen_random_uuid(), $1, $2, $3::uuid)
     ON CONFLICT (agent_id, name) DO UPDATE SET owner_user_id = EXCLUDED.owner_user_id RETURNING id`,
    [agentId, `user:${userId}`, userId],
  );
  return rows[0]!.id;
}

/** An operator board `namespace/agent/board`; `create` makes it when missing (the agent must exist). */
export async function namedBoard(sql: Sql, ref: { namespace: string; agent: string; board?: string }, create = false): Promise<KanbanBoard> {
  const name = ref.board ?? DEFAULT_BOARD;
  if (!BOARD_NAME.test(name)) throw new KanbanError('invalid', `Board name "${name}" is not a slug: use lower-case letters, digits and "-" (at most 63).`);
  const agent = await sql.query<{ id: string }>(`SELECT id FROM agents WHERE namespace = $1 AND name = $2`, [ref.namespace, ref.agent]);
  const agentId = agent.rows[0]?.id;
  if (!agentId) throw new KanbanError('not_found', `No agent ${ref.namespace}/${ref.agent}.`);
  if (create) {
    await sql.query(`INSERT INTO kanban_boards (id, agent_id, name) VALUES (gen_random_uuid(), $1, $2) ON CONFLICT (agent_id, name) DO NOTHING`, [agentId, name]);
  }
  const { rows } = await sql.query<KanbanBoard>(`SELECT ${boardColumns} FROM kanban_boards b JOIN agents a ON a.id = b.agent_id WHERE b.agent_id = $1 AND b.name = $2`, [agentId, name]);
  if (!rows[0]) throw new KanbanError('not_found', `No board "${name}" on agent ${ref.namespace}/${ref.agent}.`);
  return rows[0];
}

export async function listBoards(sql: Sql, namespace?: string): Promise<(KanbanBoard & { open: number })[]> {
  const { rows } = await sql.query<KanbanBoard & { open: number }>(
    `SELECT ${boardColumns}, (SELECT count(*)::int FROM kanban_tasks t WHERE t.board_id = b.id AND t.status NOT IN ('done', 'archived')) AS open
     FROM kanban_boards b JOIN agents a ON a.id = b.agent_id WHERE ($1::text IS NULL OR a.namespace = $1) ORDER BY a.namespace, a.name, b.name`,
    [namespace ?? null],
  );
  return rows;
}

export const adminScope = (board: KanbanBoard, actor: string): KanbanScope => ({ mode: 'admin', boardId: board.id, agentId: board.agentId, actor });

/** The turn's scope: the dispatched task's board (worker), else the person's board (orchestrator); undefined without a person. */
export async function turnScope(sql: Sql, adm: { id: string; agentId: string; userId: string | null }): Promise<KanbanScope | undefined> {
  const { rows } = await sql.query<{ runId: string; taskId: string; boardId: string }>(
    `SELECT r.id AS "runId", r.task_id AS "taskId", t.board_id AS "boardId" FROM kanban_runs r JOIN kanban_tasks t ON t.id = r.task_id
     WHERE r.admission_id = $1 AND r.agent_id = $2`,
    [adm.id, adm.agentId],
  );
  const run = rows[0];
  if (run) return { mode: 'worker', boardId: run.boardId, agentId: adm.agentId, taskId: run.taskId, runId: run.runId, actor: `agent:${adm.agentId}` };
  if (!adm.userId) return undefined;
  return { mode: 'orchestrator', boardId: await personalBoard(sql, adm.agentId, adm.userId), agentId: adm.agentId, actor: `user:${adm.userId}` };
}
