// `/kanban` in chat: the sender's own board on this agent (core/kanban "Scoping"), answered out of
// band like /status — it never waits behind a running turn (Hermes: /kanban bypasses the
// running-agent guard). Tasks created here are assigned to this agent. A refusal is the answer;
// the command's admission is still recorded (a savepoint keeps the transaction usable).
import {
  KanbanError, addComment, archiveTask, blockTask, commandWord, completeTask, createTask, listTasks, personalBoard, showTask, unblockTask,
  type AnswerFn, type KanbanScope, type KanbanTask, type Sql,
} from '../core/index.js';

export const KANBAN_USAGE = 'list | show ID | create TITLE | comment ID TEXT | block ID REASON | unblock ID | complete ID [SUMMARY] | archive ID';

const line = (t: KanbanTask) => `${t.id} [${t.status}${t.blockKind ? `:${t.blockKind}` : ''}] ${t.title}${t.assignee ? ` → ${t.assignee}` : ''}`;

/**
 * Comment authors as a chat user understands them: the ledger's `user:<uuid>` is "you" for the
 * sender and the person's name (or platform id) for anyone else, `agent:<uuid>` the agent's
 * `namespace/name`; other actors (`dispatcher`, `admin-api:…`, `cli`) as they are.
 */
async function readableActors(sql: Sql, actors: readonly string[], self: string): Promise<(actor: string) => string> {
  const ids = (prefix: string) => [...new Set(actors.filter((a) => a.startsWith(prefix)).map((a) => a.slice(prefix.length)))];
  const users = ids('user:'), agents = ids('agent:');
  const names = new Map<string, string>();
  if (users.length) {
    const { rows } = await sql.query<{ id: string; name: string }>(`SELECT id::text, coalesce(display_name, platform_user_id) AS name FROM users WHERE id::text = ANY($1)`, [users]);
    for (const r of rows) names.set(`user:${r.id}`, r.name);
  }
  if (agents.length) {
    const { rows } = await sql.query<{ id: string; ref: string }>(`SELECT id::text, namespace || '/' || name AS ref FROM agents WHERE id::text = ANY($1)`, [agents]);
    for (const r of rows) names.set(`agent:${r.id}`, r.ref);
  }
  return (actor) => (actor === self ? 'you' : names.get(actor) ?? (actor.startsWith('user:') ? 'someone' : actor));
}

async function show(sql: Sql, scope: KanbanScope, id: string): Promise<string> {
  const d = await showTask(sql, scope, id);
  const t = d.task;
  const comments = d.comments.slice(-5);
  const who = await readableActors(sql, comments.map((c) => c.author), scope.actor);
  return [line(t), ...(t.body ? [t.body] : []), ...(t.blockReason ? [`Blocked: ${t.blockReason}`] : []), ...(t.result ? [`Result: ${t.result}`] : []),
    ...(d.parents.length ? [`Depends on: ${d.parents.map((p) => `${p.id} (${p.status})`).join(', ')}`] : []),
    `Runs: ${d.runs.length ? d.runs.map((r) => r.outcome ?? r.status).join(', ') : 'none'}`,
    ...comments.map((c) => `${who(c.author)}: ${c.body}`)].join('\n');
}

/** One `/kanban` subcommand on the sender's board. */
async function run(sql: Sql, scope: KanbanScope, args: string, platform: string): Promise<string> {
  const [sub = 'list', first = '', ...rest] = args.split(/\s+/).filter(Boolean);
  const text = args.trim().split(/\s+/).slice(2).join(' ');
  const now = new Date();
  switch (sub.toLowerCase()) {
    case 'list': {
      const { tasks, truncated } = await listTasks(sql, scope, {});
      return tasks.length ? [...tasks.map(line), ...(truncated ? ['(more tasks not shown)'] : [])].join('\n') : 'Your board has no open tasks.';
    }
    case 'show': return show(sql, scope, first);
    case 'create': {
      const { task } = await createTask(sql, scope, { title: [first, ...rest].join(' '), assignee: await agentName(sql, scope.agentId) }, now);
      return `Created ${line(task)}.`;
    }
    case 'comment': await addComment(sql, scope, first, text, now); return `Commented on ${first}.`;
    case 'block': return `Task ${first} is ${await blockTask(sql, scope, first, { reason: text }, now)}.`;
    case 'unblock': return `Task ${first} is ${await unblockTask(sql, scope, first, now)}.`;
    case 'complete': await completeTask(sql, scope, first, { summary: text || 'completed from chat' }, now); return `Task ${first} is done.`;
    case 'archive': await archiveTask(sql, scope, first, now); return `Task ${first} is archived.`;
    default: return `Unknown subcommand "${sub}". ${commandWord(platform, 'kanban')} ${KANBAN_USAGE}`;
  }
}

async function agentName(sql: Sql, agentId: string): Promise<string> {
  const { rows } = await sql.query<{ ref: string }>(`SELECT namespace || '/' || name AS ref FROM agents WHERE id = $1`, [agentId]);
  return rows[0]?.ref ?? agentId;
}

export function kanbanAnswer(agentId: string, args: string, platform: string): AnswerFn {
  return async (sql, admitted) => {
    const scope: KanbanScope = { mode: 'orchestrator', boardId: await personalBoard(sql, agentId, admitted.userId), agentId, actor: `user:${admitted.userId}` };
    await sql.query('SAVEPOINT kanban_command');
    try {
      return await run(sql, scope, args, platform);
    } catch (err) {
      await sql.query('ROLLBACK TO SAVEPOINT kanban_command');
      // The board's refusals name the model's tools (kanban_list…); a chat user has the subcommands.
      if (err instanceof KanbanError) return err.message.replace(/\bkanban_(list|show|create|comment|block|unblock|complete|archive)\b/g, (_m, sub: string) => `${commandWord(platform, 'kanban')} ${sub}`);
      throw err;
    }
  };
}
