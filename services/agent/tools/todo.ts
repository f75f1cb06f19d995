// `todo` (Hermes' arguments: todos [{id, content, status, parent?}], merge): the session's task
// list — give `todos` to write (replace, or merge by id), omit it to read; every call returns
// the whole list. Kept in Postgres through ToolContext.todos (todo-store.ts), so it survives
// restarts and is the same on every worker. Our earlier {action: add|done|list} arguments are
// gone: Hermes' are the contract (an old-style call is refused as invalid arguments).
import { z } from 'zod';
import { defineTool } from './registry.js';
import { TODO_STATUSES, todoSummary } from './todo-list.js';
import { toolError } from './sandbox-result.js';

export const NO_TODO_STORE = 'The todo list is not available here (no todo store is configured for this worker).';

const item = z.object({
  id: z.string().describe('A short id of your choosing, unique in the list'),
  content: z.string().describe('Task description'),
  status: z.enum(TODO_STATUSES),
  parent: z.string().optional().describe('Optional id of another item, making this a nested subtask'),
});

const schema = z.object({
  todos: z.array(item.partial({ content: true, status: true })).max(1_000).optional().describe('Task items to write; omit to read the current list'),
  merge: z.boolean().optional().describe('true: update existing items by id and add new ones. false (default): replace the whole list with a fresh plan.'),
}).strict();

export const todoTool = defineTool({
  name: 'todo',
  description: 'Track a task list for multi-step work (3+ steps). Call with no parameters to read the current list. List order is priority; only ONE item in_progress at a time; mark an item completed only after the work is verified done; if something fails, cancel it and add a revised item. Always returns the full current list.',
  toolset: 'todo',
  sideEffect: 'writes',
  postgresArguments: true,
  schema,
  handler: async ({ todos, merge }, ctx) => {
    if (!ctx.todos) return toolError(NO_TODO_STORE);
    const list = todos === undefined ? await ctx.todos.read(ctx.sessionId) : await ctx.todos.write(ctx.sessionId, todos, merge ?? false);
    return JSON.stringify(todoSummary(list));
  },
});
