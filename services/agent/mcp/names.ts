// How an MCP server's tools appear to the model: `mcp_<server>_<tool>` in toolset `mcp-<server>`
// (Hermes' naming), filtered by the Profile's include/exclude lists, names limited to what the
// model APIs accept ([A-Za-z0-9_-], at most 64 characters).
import { createHash } from 'node:crypto';

/** Longest tool name the model APIs take. */
export const MAX_TOOL_NAME = 64;

export const mcpToolset = (server: string): string => `mcp-${server}`;

/** The model-facing name of `tool` on `server`; over-long names keep a hash of the full one, so two never collide. */
export function mcpToolName(server: string, tool: string): string {
  const name = `mcp_${server}_${tool}`.replace(/[^A-Za-z0-9_-]/g, '_');
  if (name.length <= MAX_TOOL_NAME) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_TOOL_NAME - 9)}_${hash}`;
}

export interface ToolFilter {
  /** Only these tools (the server's names); absent = all. */
  include?: readonly string[];
  /** Never these tools (applied after include). */
  exclude?: readonly string[];
}

/** Whether the server's tool `name` is offered under `filter`. */
export function toolWanted(filter: ToolFilter, name: string): boolean {
  if (filter.include && !filter.include.includes(name)) return false;
  return !filter.exclude?.includes(name);
}
