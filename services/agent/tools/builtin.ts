// Built-in tools with no backend: the clock (read-only) and a per-session todo list (writes,
// kept in process for the session; durable todo state arrives with memory).
import { z } from 'zod';
import { defineTool, ToolRegistry } from './registry.js';

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

const todos = new Map<string, { text: string; done: boolean }[]>();

export const todoTool = defineTool({
  name: 'todo',
  description: 'A task list for this session: add items, mark them done, or list them.',
  toolset: 'todo',
  sideEffect: 'writes',
  schema: z.object({ action: z.enum(['add', 'done', 'list']), text: z.string().optional(), index: z.number().int().min(0).optional() }).strict(),
  handler: ({ action, text, index }, ctx) => {
    const list = todos.get(ctx.sessionId) ?? [];
    todos.set(ctx.sessionId, list);
    if (action === 'add') {
      if (!text) throw new Error('action "add" needs text');
      list.push({ text, done: false });
    } else if (action === 'done') {
      const item = index === undefined ? undefined : list[index];
      if (!item) throw new Error(`no todo item at index ${String(index)}; the list has ${list.length}`);
      item.done = true;
    }
    return JSON.stringify({ items: list });
  },
});

/** Toolsets an agent gets when its Profile names none. */
export const DEFAULT_TOOLSETS: readonly string[] = ['clock'];

export function builtinRegistry(): ToolRegistry {
  return new ToolRegistry().register(getTimeTool).register(todoTool);
}

/** Not in any toolset: the loop offers it whenever the turn can store oversized results. */
export { readToolResultTool } from './stored-results.js';
