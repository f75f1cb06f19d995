// The MCP servers' tools of a turn: one connection per (agent, server configuration) in the
// worker's pool, requests through the worker's SSRF guard (HERMES_WEB_ALLOW_CIDRS lets chosen
// private ranges through, as for the web tools), header values read from Secrets at connect.
// A server is the toolset mcp-<name>: team-mode permissions and a platform's narrowed toolsets
// apply to it as to any toolset. Its tools are listed before the prompt is loaded; the list's
// fingerprint is part of the prompt identity, so a changed list rebuilds the stored prompt once.
import { guardedMcpFetch, isEnvRef, McpConnection, McpPool, mcpPoolKey, mcpServerTools, mcpToolset, toolsFingerprint, type BreakerOptions, type SecretResolver, type Tool, type UrlGuard } from '../agent/index.js';
import { toolsetAllowed, type Admission, type CompiledAgent, type Logger, type Permissions } from '../core/index.js';
import { platformToolsets } from '../platforms/index.js';

type Server = NonNullable<CompiledAgent['mcpServers']>[number];

/** The worker's MCP connections and how they fail (tests inject a clock and breaker timings). */
export interface McpDeps {
  pool: McpPool;
  now: () => number;
  breaker?: BreakerOptions;
}

export function createMcpDeps(o: { now?: () => number; breaker?: BreakerOptions; max?: number; idleMs?: number } = {}): McpDeps {
  const now = o.now ?? Date.now;
  return { pool: new McpPool({ now, ...(o.max ? { max: o.max } : {}), ...(o.idleMs ? { idleMs: o.idleMs } : {}) }), now, ...(o.breaker ? { breaker: o.breaker } : {}) };
}

/** The header values of `server`, from Secrets of the agent's namespace (never env: the Profile chose the url). */
async function serverHeaders(secrets: SecretResolver, agent: CompiledAgent, server: Server): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [header, ref] of Object.entries(server.headerRefs ?? {})) {
    if (isEnvRef(ref)) throw new Error(`header ${header} must come from a Secret (secretKeyRef), not the environment`);
    const value = await secrets.resolve(agent.agent.namespace, ref);
    if (value === undefined) throw new Error(`header ${header}: Secret "${ref.name}" has no key "${ref.key}"`);
    out[header] = value;
  }
  return out;
}

export interface McpTurnDeps {
  mcp: McpDeps;
  guard: UrlGuard;
  secrets: SecretResolver;
  log: Logger;
}

/** Whether this turn may offer the server's toolset (team-mode permissions, the platform's narrowed toolsets). */
function serverOffered(agent: CompiledAgent, adm: Admission, perms: Permissions | undefined, server: Server): boolean {
  const toolset = mcpToolset(server.name);
  const narrowed = platformToolsets(agent, adm.platform);
  return (!perms || toolsetAllowed(perms, toolset)) && (!narrowed || narrowed.includes(toolset));
}

function connectionOf(d: McpTurnDeps, agent: CompiledAgent, server: Server): McpConnection {
  const key = mcpPoolKey(`${agent.agent.namespace}/${agent.agent.name}`, server);
  return d.mcp.pool.get(key, () => new McpConnection({
    name: server.name, transport: server.transport, url: server.url,
    ...(server.include ? { include: server.include } : {}),
    ...(server.exclude ? { exclude: server.exclude } : {}),
    ...(server.timeoutSeconds ? { callTimeoutMs: server.timeoutSeconds * 1_000 } : {}),
    ...(server.connectTimeoutSeconds ? { connectTimeoutMs: server.connectTimeoutSeconds * 1_000 } : {}),
  }, {
    headers: () => serverHeaders(d.secrets, agent, server), fetch: guardedMcpFetch(d.guard), now: d.mcp.now,
    ...(d.mcp.breaker ? { breaker: d.mcp.breaker } : {}),
    onToolsChanged: () => d.log.info({ agent: agent.agent, server: server.name }, 'MCP server changed its tool list; sessions rebuild their prompt once'),
  }));
}

export interface TurnMcpTools {
  tools: Tool[];
  /** The tools' fingerprint (prompt identity); absent when there are none. */
  version?: string;
}

/** The MCP tools this turn offers (a server that cannot be reached offers its last known tools, or none). */
export async function turnMcpTools(d: McpTurnDeps, agent: CompiledAgent, adm: Admission, opts: { perms?: Permissions; signal?: AbortSignal } = {}): Promise<TurnMcpTools> {
  const servers = (agent.mcpServers ?? []).filter((s) => serverOffered(agent, adm, opts.perms, s));
  if (!servers.length) return { tools: [] };
  const lists = await Promise.all(servers.map(async (s) => {
    const conn = connectionOf(d, agent, s);
    const tools = await mcpServerTools(conn, opts.signal);
    if (!conn.connected) d.log.warn({ agent: agent.agent, server: s.name, tools: tools.length, why: conn.breaker.refusal() }, 'MCP server is unreachable; its last known tools are offered');
    return tools;
  }));
  const tools = lists.flat().sort((a, b) => a.name.localeCompare(b.name));
  return tools.length ? { tools, version: toolsFingerprint(tools) } : { tools };
}

/** {@link turnMcpTools} where the worker has a pool and a guard and the agent names servers; else none. */
export function mcpToolsOf(loop: { mcp?: McpDeps; webGuard?: UrlGuard }, deps: { secrets: SecretResolver; log: Logger }, agent: CompiledAgent, adm: Admission,
  opts: { perms?: Permissions; signal?: AbortSignal } = {}): Promise<TurnMcpTools> {
  if (!loop.mcp || !loop.webGuard || !agent.mcpServers?.length) return Promise.resolve({ tools: [] });
  return turnMcpTools({ mcp: loop.mcp, guard: loop.webGuard, secrets: deps.secrets, log: deps.log }, agent, adm, opts);
}
