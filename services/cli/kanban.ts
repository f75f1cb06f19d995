// `hermes kanban …` (issue 15 point 5): the Kanban board from a terminal, for operators. Talks to
// Postgres only (DATABASE_URL), like `hermes pairing`; the gateway's dispatcher picks the changes
// up on its next tick. A board is NAMESPACE/AGENT[/BOARD] (BOARD defaults to `default`); the agent's
// namespace is the board's: assignees are agents of that namespace. Changes are recorded as `cli:<user>`.
import { userInfo } from 'node:os';
import { Command, Option } from 'commander';
import {
  BLOCK_KINDS, KANBAN_STATUSES, KanbanError, addAttachment, addComment, adminScope, archiveTask, blockTask, completeTask, createTask, linkTasks, listBoards, listTasks, namedBoard,
  showTask, unblockTask, type BlockKind, type Db, type KanbanScope, type KanbanStatus, type KanbanTask, type Sql,
} from '../core/index.js';
import { UsageError, wholeNumber, withDb } from './cli-db.js';

const actor = () => `cli:${userInfo().username}`;
/** `withDb` where the board's own refusals (KanbanError) are said as they are. */
const onDb = (fn: (db: Db) => Promise<void>) => withDb(fn, [KanbanError]);

/** Runs `fn` in one transaction on board `ref` (NAMESPACE/AGENT[/BOARD]); `create` makes the board when missing. */
function onBoard(ref: string, fn: (sql: Sql, scope: KanbanScope) => Promise<void>, create = false): Promise<void> {
  return onDb(async (db) => {
    const [namespace, agent, board, ...rest] = ref.split('/');
    if (!namespace || !agent || rest.length) throw new UsageError(`name the board as NAMESPACE/AGENT[/BOARD] (got "${ref}")`);
    await db.tx(async (sql) => fn(sql, adminScope(await namedBoard(sql, { namespace, agent, ...(board ? { board } : {}) }, create), actor())));
  });
}

const line = (t: KanbanTask) => `${t.id}  ${t.status.padEnd(9)}${t.blockKind ? ` (${t.blockKind})` : ''}  ${t.title}${t.assignee ? `  → ${t.assignee}` : ''}`;
const boardArg = ['<board>', 'NAMESPACE/AGENT[/BOARD] (BOARD: default)'] as const;
const collect = (v: string, prev: string[] = []) => [...prev, v];

export const kanbanCommand = new Command('kanban')
  .description('The Kanban board: durable tasks that agents run in the background, with dependencies, comments and a dispatcher (docs/kanban.md).')
  .addHelpText('after', `\nStates: ${KANBAN_STATUSES.join(', ')}. Block kinds: ${BLOCK_KINDS.join(', ')}.`);

kanbanCommand.command('boards').description('Every board (or those of one namespace) with its open task count.')
  .argument('[namespace]', 'only this namespace')
  .action((namespace?: string) => onDb(async (db) => {
    const boards = await listBoards(db.pool, namespace);
    if (!boards.length) console.log('No boards.');
    for (const b of boards) console.log(`${b.namespace}/${b.agent}/${b.name}  ${b.open} open${b.ownerUserId ? '  (a person\'s board)' : ''}`);
  }));

kanbanCommand.command('list').description('Tasks on a board, highest priority first (archived ones with --archived).')
  .argument(...boardArg)
  .addOption(new Option('-s, --status <status>', 'only this state').choices([...KANBAN_STATUSES]))
  .option('-a, --assignee <agent>', 'only tasks of this agent').option('--archived', 'include archived tasks').option('--json', 'print JSON')
  .action((ref: string, o: { status?: KanbanStatus; assignee?: string; archived?: boolean; json?: boolean }) => onBoard(ref, async (sql, scope) => {
    const { tasks, truncated } = await listTasks(sql, scope, { ...(o.status ? { status: o.status } : {}), ...(o.assignee ? { assignee: o.assignee } : {}), includeArchived: o.archived ?? false, limit: 200 });
    if (o.json) return console.log(JSON.stringify({ tasks, truncated }, null, 2));
    if (!tasks.length) console.log('No tasks.');
    for (const t of tasks) console.log(line(t));
    if (truncated) console.log('(more tasks not shown)');
  }));

kanbanCommand.command('show').description('One task: body, dependencies, comments, attachments, runs and recent events.')
  .argument(...boardArg).argument('<task>', 'task id (t_…)').option('--json', 'print JSON')
  .action((ref: string, id: string, o: { json?: boolean }) => onBoard(ref, async (sql, scope) => {
    const d = await showTask(sql, scope, id);
    if (o.json) return console.log(JSON.stringify(d, null, 2));
    console.log(line(d.task));
    if (d.task.body) console.log(`\n${d.task.body}\n`);
    if (d.task.blockReason) console.log(`blocked: ${d.task.blockReason}`);
    if (d.task.result) console.log(`result: ${d.task.result}`);
    for (const p of d.parents) console.log(`depends on ${p.id} (${p.status}) ${p.title}`);
    for (const c of d.comments) console.log(`comment ${c.author}: ${c.body}`);
    for (const a of d.attachments) console.log(`attachment ${a.name}: ${a.ref}`);
    for (const r of d.runs) console.log(`run ${r.id} ${r.status}${r.outcome ? ` ${r.outcome}` : ''}${r.error ? `: ${r.error}` : ''}`);
  }));

kanbanCommand.command('create').description('Create a task (the board is created on first use). It waits in todo until its parents are done; the dispatcher then starts the assignee\'s turn.')
  .argument(...boardArg).argument('<title>', 'short title')
  .option('-b, --body <text>', 'the full spec').option('-a, --assignee <agent>', 'agent that runs it (name or namespace/name, same namespace)')
  .option('-p, --parent <task>', 'a parent task id (repeatable)', collect).option('--priority <n>', 'higher runs sooner', wholeNumber(-2_147_483_648))
  .option('--triage', 'land in triage for a person').option('--max-runtime <seconds>', 'runtime cap', wholeNumber(1))
  .option('--max-retries <n>', 'failed runs before it is blocked (default: HERMES_KANBAN_FAILURE_LIMIT)', wholeNumber(0))
  .option('--idempotency-key <key>', 'return the existing task with this key instead of a duplicate')
  .action((ref: string, title: string, o: { body?: string; assignee?: string; parent?: string[]; priority?: number; triage?: boolean; maxRuntime?: number; maxRetries?: number; idempotencyKey?: string }) => onBoard(ref, async (sql, scope) => {
    const { task, created } = await createTask(sql, scope, {
      title, ...(o.body ? { body: o.body } : {}), ...(o.assignee ? { assignee: o.assignee } : {}), ...(o.parent ? { parents: o.parent } : {}), ...(o.priority !== undefined ? { priority: o.priority } : {}),
      ...(o.triage ? { triage: true } : {}), ...(o.maxRuntime ? { maxRuntimeSeconds: o.maxRuntime } : {}), ...(o.maxRetries ? { maxRetries: o.maxRetries } : {}), ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}),
    }, new Date());
    console.log(`${created ? 'Created' : 'Exists'} ${line(task)}`);
  }, true));

kanbanCommand.command('link').description('Make CHILD wait for PARENT (cycles are refused).')
  .argument(...boardArg).argument('<parent>', 'parent task id').argument('<child>', 'child task id')
  .action((ref: string, parent: string, child: string) => onBoard(ref, async (sql, scope) => { await linkTasks(sql, scope, parent, child, new Date()); console.log(`${child} now waits for ${parent}.`); }));

kanbanCommand.command('comment').description('Add a comment to a task\'s thread (the next run reads the latest ones).')
  .argument(...boardArg).argument('<task>', 'task id').argument('<text>', 'the comment')
  .action((ref: string, id: string, text: string) => onBoard(ref, async (sql, scope) => { await addComment(sql, scope, id, text, new Date()); console.log(`Commented on ${id}.`); }));

kanbanCommand.command('attach').description('Attach a reference (an http(s) URL, s3://, gs:// or workspace: reference) to a task; never the bytes.')
  .argument(...boardArg).argument('<task>', 'task id').argument('<name>', 'a label').argument('<ref>', 'the reference')
  .action((ref: string, id: string, name: string, target: string) => onBoard(ref, async (sql, scope) => { await addAttachment(sql, scope, id, { name, ref: target }, new Date()); console.log(`Attached ${name} to ${id}.`); }));

kanbanCommand.command('block').description('Block a task for a person (a running run is cancelled). After two unblocks, a block sends it to triage.')
  .argument(...boardArg).argument('<task>', 'task id').argument('<reason>', 'what must be answered')
  .addOption(new Option('-k, --kind <kind>', 'block kind').choices([...BLOCK_KINDS]).default('needs_input'))
  .action((ref: string, id: string, reason: string, o: { kind: BlockKind }) => onBoard(ref, async (sql, scope) => console.log(`Task ${id} is ${await blockTask(sql, scope, id, { reason, kind: o.kind }, new Date())}.`)));

kanbanCommand.command('unblock').description('A blocked task back to ready (todo while a parent is not done); a triaged one to todo.')
  .argument(...boardArg).argument('<task>', 'task id')
  .action((ref: string, id: string) => onBoard(ref, async (sql, scope) => console.log(`Task ${id} is ${await unblockTask(sql, scope, id, new Date())}.`)));

kanbanCommand.command('complete').description('Mark a task done by hand (a running run is cancelled).')
  .argument(...boardArg).argument('<task>', 'task id').option('-s, --summary <text>', 'the handoff', 'completed by an operator')
  .action((ref: string, id: string, o: { summary: string }) => onBoard(ref, async (sql, scope) => { await completeTask(sql, scope, id, { summary: o.summary }, new Date()); console.log(`Task ${id} is done.`); }));

kanbanCommand.command('archive').description('Archive a task that is not running (hidden from lists).')
  .argument(...boardArg).argument('<task>', 'task id')
  .action((ref: string, id: string) => onBoard(ref, async (sql, scope) => { await archiveTask(sql, scope, id, new Date()); console.log(`Task ${id} is archived.`); }));
