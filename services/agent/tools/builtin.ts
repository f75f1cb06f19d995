// Built-in tools with no sandbox: the clock (read-only), the session's todo list (writes, kept in
// Postgres through ToolContext.todos: todo.ts), bounded memory (ToolContext.memory: memory.ts) and
// recall from past conversations (ToolContext.recall: session-search.ts) and the skills an agent
// offers (ToolContext.skills: skills.ts).
import { z } from 'zod';
import { defineTool, ToolRegistry } from './registry.js';
import { memoryTool } from './memory.js';
import { sessionSearchTool } from './session-search.js';
import { skillManageTool } from './skill-manage.js';
import { skillsListTool, skillViewTool } from './skills.js';
import { todoTool } from './todo.js';
import { clarifyTool } from './clarify.js';
import { sendMessageTool } from './send-message.js';
import { webExtractTool, webSearchTool } from './web.js';
import { kanbanTools } from './kanban.js';
import { delegateTaskTool } from './delegate.js';

export { clarifyTool, delegateTaskTool, sendMessageTool, memoryTool, sessionSearchTool, skillManageTool, skillsListTool, skillViewTool, todoTool, webExtractTool, webSearchTool };

export const getTimeTool = defineTool({
  name: 'get_time',
  description: 'Current date and time (ISO 8601), optionally in an IANA time zone such as "Europe/Berlin".',
  toolset: 'clock',
  sideEffect: 'read-only',
  schema: z.object({ timezone: z.string().optional().describe('IANA time zone; default UTC') }).strict(),
  handler: ({ timezone }, ctx) => {
    const now = new Date(ctx.now());
    const tz = timezone ?? 'UTC';
    const local = new Intl.DateTimeFormat('en-GB', { timeZone: tz, dateStyle: 'full', timeStyle: 'long' }).format(now);
    return JSON.stringify({ iso: now.toISOString(), timezone: tz, local });
  },
});

/** Toolsets an agent gets when its Profile names none. */
export const DEFAULT_TOOLSETS: readonly string[] = ['clock'];

export function builtinRegistry(): ToolRegistry {
  const registry = new ToolRegistry().register(getTimeTool).register(todoTool).register(memoryTool).register(sessionSearchTool)
    .register(skillsListTool).register(skillViewTool).register(skillManageTool)
    .register(webSearchTool).register(webExtractTool).register(delegateTaskTool)
    .register(clarifyTool).register(sendMessageTool);
  for (const t of kanbanTools) registry.register(t);
  return registry;
}

/** Not in any toolset: the loop offers it whenever the turn can store oversized results. */
export { readToolResultTool } from './stored-results.js';
