// An MCP server's tools as the agent's tools: `mcp_<server>_<tool>` in toolset `mcp-<server>`,
// the server's JSON Schema passed to the model as it is (the server validates the arguments),
// side effects unknown (so calls run in order). A failure is the call's error result, never the
// turn's: redacted, with what to do.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineTool, type Tool } from '../tools/registry.js';
import type { Tool as McpListedTool } from '@modelcontextprotocol/sdk/types.js';
import { McpUnavailable, type McpConnection } from './connection.js';
import { mcpToolName, mcpToolset, toolWanted } from './names.js';

const MAX_DESCRIPTION = 1_024;

/** The tools of `conn` the Profile wants (connecting first when needed), as the server lists them. */
export async function mcpWantedTools(conn: McpConnection, signal?: AbortSignal): Promise<McpListedTool[]> {
  return (await conn.tools(signal)).filter((t) => toolWanted(conn.server, t.name));
}

/** The model-visible tools of `conn` (connecting first when needed), named by `nameOf` (default: Hermes' mcp_<server>_<tool>). */
export async function mcpServerTools(conn: McpConnection, signal?: AbortSignal, nameOf: (tool: string) => string = (tool) => mcpToolName(conn.server.name, tool)): Promise<Tool[]> {
  return mcpModelTools(conn, await mcpWantedTools(conn, signal), nameOf);
}

/** `listed` tools of `conn` as the agent's tools, named by `nameOf`. */
export function mcpModelTools(conn: McpConnection, listed: readonly McpListedTool[], nameOf: (tool: string) => string): Tool[] {
  const server = conn.server;
  return listed.map((t) => {
    const description = `[MCP ${server.name}] ${t.description ?? t.title ?? t.name}`.slice(0, MAX_DESCRIPTION);
    const parameters = { ...(t.inputSchema as Record<string, unknown>), type: 'object' };
    return {
      ...defineTool({
        name: nameOf(t.name),
        description,
        toolset: mcpToolset(server.name),
        sideEffect: 'external',
        schema: z.record(z.string(), z.unknown()),
        handler: async (args, ctx) => {
          try {
            const { text, isError } = await conn.call(t.name, args, ctx.signal);
            return JSON.stringify(isError ? { error: conn.redact(text) } : { result: text });
          } catch (err) {
            ctx.signal.throwIfAborted();
            const message = err instanceof McpUnavailable ? err.message : conn.redact(`MCP server ${server.name} failed: ${(err as Error).message}`);
            return JSON.stringify({ error: message });
          }
        },
      }),
      parameters,
    };
  });
}

/** A fingerprint of what the model sees of these tools (names, descriptions, schemas): part of the prompt identity. */
export function toolsFingerprint(tools: readonly Tool[]): string {
  const seen = tools.map((t) => [t.name, t.description, t.parameters ?? null]);
  return createHash('sha256').update(JSON.stringify(seen)).digest('hex').slice(0, 16);
}
