// How an MCP server's tools appear to the model: `mcp_<server>_<tool>` in toolset `mcp-<server>`
// (Hermes' naming), filtered by the Profile's include/exclude lists, names limited to what the
// model APIs accept ([A-Za-z0-9_-], at most 64 characters).
import { createHash } from 'node:crypto';

/** Longest tool name the model APIs take. */
export const MAX_TOOL_NAME = 64;

export const mcpToolset = (server: string): string => `mcp-${server}`;

const withHash = (name: string, of: string): string => {
  const hash = createHash('sha256').update(of).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_TOOL_NAME - 9)}_${hash}`;
};

/** The model-facing name of `tool` on `server`; over-long names keep a hash of the full one. */
export function mcpToolName(server: string, tool: string): string {
  const name = `mcp_${server}_${tool}`.replace(/[^A-Za-z0-9_-]/g, '_');
  return name.length <= MAX_TOOL_NAME ? name : withHash(name, name);
}

/** One MCP tool of a turn: its server and its name on that server. */
export interface McpToolRef { server: string; tool: string }

const refKey = (r: McpToolRef) => `${r.server}\u0000${r.tool}`;

/**
 * The model-facing names of a turn's MCP tools, by {@link mcpToolRefKey}: Hermes' names, except
 * where two tools would get the same one — spellings that differ only in characters the model APIs
 * refuse ("get.item" and "get_item" on one server), server and tool names that run together
 * (server "a" tool "b_c" and server "a_b" tool "c"), long names cut alike — then each of them is
 * named with a hash of its own server and tool, so no call ever reaches another tool and the
 * model never gets two tools of one name.
 */
export function mcpToolNames(refs: readonly McpToolRef[]): Map<string, string> {
  const plain = refs.map((r) => [refKey(r), mcpToolName(r.server, r.tool)] as const);
  const uses = new Map<string, number>();
  for (const [, name] of plain) uses.set(name, (uses.get(name) ?? 0) + 1);
  return new Map(plain.map(([key, name]) => [key, (uses.get(name) ?? 0) > 1 ? withHash(name, key) : name]));
}

export const mcpToolRefKey = refKey;

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
