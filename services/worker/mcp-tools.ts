// The MCP servers' tools of a turn: one connection per (agent, server configuration) in the
// worker's pool, requests through the worker's SSRF guard (HERMES_WEB_ALLOW_CIDRS lets chosen
// private ranges through, as for the web tools), header values read from Secrets at connect.
// A server is the toolset mcp-<name>: team-mode permissions and a platform's narrowed toolsets
// apply to it as to any toolset. Its tools are listed before the prompt is loaded; the list's
// fingerprint is part of the prompt identity, so a changed list rebuilds the stored prompt once.
//
// A stdio server is a process in the session's sandbox (its line channel), never in the worker:
// one per (turn, server), started when the turn lists its tools and ended with the turn. Its
// breaker is kept per (agent, server configuration, session) across turns, so a broken server
// stops costing each turn a start once it is open.
import {
  guardedMcpFetch, isEnvRef, McpConnection, McpPool, mcpModelTools, mcpPoolKey, mcpToolNames, mcpToolRefKey, mcpToolset, mcpWantedTools, sandboxStdioOpener, ServerBreaker, toolsFingerprint,
  type BreakerOptions, type SecretResolver, type Tool, type UrlGuard,
} from '../agent/index.js';
import { toolsetAllowed, type Admission, type CompiledAgent, type Logger, type Permissions } from '../core/index.js';
import { platformToolsets } from '../platforms/index.js';
import type { SessionSandbox } from '../sandbox/index.js';
import { sessionSandboxOf, type SandboxBackends } from './sandboxes.js';

type Server = NonNullable<CompiledAgent['mcpServers']>[number];

/** The worker's MCP connections and how they fail (tests inject a clock and breaker timings). */
export interface McpDeps {
  pool: McpPool;
  now: () => number;
  breaker?: BreakerOptions;
  /** The breakers of stdio servers, per (agent, server configuration, session), kept across turns. */
  stdioBreakers?: Map<string, ServerBreaker>;
}

/** Most stdio breakers kept (the oldest is forgotten past this). */
const MAX_STDIO_BREAKERS = 4_096;

export function createMcpDeps(o: { now?: () => number; breaker?: BreakerOptions; max?: number; idleMs?: number } = {}): McpDeps {
  const now = o.now ?? Date.now;
  return { pool: new McpPool({ now, ...(o.max ? { max: o.max } : {}), ...(o.idleMs ? { idleMs: o.idleMs } : {}) }), now, ...(o.breaker ? { breaker: o.breaker } : {}), stdioBreakers: new Map() };
}

/** Values of `refs` (header or env names → Secret references), from Secrets of the agent's namespace, never the worker's environment. */
async function secretValues(secrets: SecretResolver, agent: CompiledAgent, refs: Server['headerRefs'], what: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, ref] of Object.entries(refs ?? {})) {
    if (isEnvRef(ref)) throw new Error(`${what} ${name} must come from a Secret (secretKeyRef), not the environment`);
    const value = await secrets.resolve(agent.agent.namespace, ref);
    if (value === undefined) throw new Error(`${what} ${name}: Secret "${ref.name}" has no key "${ref.key}"`);
    out[name] = value;
  }
  return out;
}

export interface McpTurnDeps {
  mcp: McpDeps;
  /** http and sse servers: the SSRF guard (absent: they offer nothing). */
  guard?: UrlGuard;
  secrets: SecretResolver;
  log: Logger;
  /** stdio servers: the worker's sandbox backends (absent: stdio servers offer nothing). */
  sandboxes?: SandboxBackends;
}

/** Whether this turn may offer the server's toolset (team-mode permissions, the platform's narrowed toolsets). */
function serverOffered(agent: CompiledAgent, platform: string, perms: Permissions | undefined, server: Server): boolean {
  const toolset = mcpToolset(server.name);
  const narrowed = platformToolsets(agent, platform);
  return (!perms || toolsetAllowed(perms, toolset)) && (!narrowed || narrowed.includes(toolset));
}

const settingsOf = (server: Server) => ({
  name: server.name, transport: server.transport, ...(server.url ? { url: server.url } : {}),
  ...(server.include ? { include: server.include } : {}),
  ...(server.exclude ? { exclude: server.exclude } : {}),
  ...(server.timeoutSeconds ? { callTimeoutMs: server.timeoutSeconds * 1_000 } : {}),
  ...(server.connectTimeoutSeconds ? { connectTimeoutMs: server.connectTimeoutSeconds * 1_000 } : {}),
});

const noFetch = () => Promise.reject(new Error('a stdio MCP server makes no HTTP requests'));

function connectionOf(d: McpTurnDeps & { guard: UrlGuard }, agent: CompiledAgent, server: Server): McpConnection {
  const key = mcpPoolKey(`${agent.agent.namespace}/${agent.agent.name}`, server);
  return d.mcp.pool.get(key, () => new McpConnection(settingsOf(server), {
    headers: () => secretValues(d.secrets, agent, server.headerRefs, 'header'), fetch: guardedMcpFetch(d.guard), now: d.mcp.now,
    ...(d.mcp.breaker ? { breaker: d.mcp.breaker } : {}),
    onToolsChanged: () => d.log.info({ agent: agent.agent, server: server.name }, 'MCP server changed its tool list; sessions rebuild their prompt once'),
  }));
}

/** The breaker of a stdio server in this session (kept across its turns). */
function stdioBreaker(d: McpTurnDeps, agent: CompiledAgent, adm: Admission, server: Server): ServerBreaker | undefined {
  const all = d.mcp.stdioBreakers;
  if (!all) return undefined;
  const key = `${mcpPoolKey(`${agent.agent.namespace}/${agent.agent.name}`, server)}/${adm.sessionId}`;
  let b = all.get(key);
  if (!b) {
    b = new ServerBreaker(d.mcp.now, d.mcp.breaker);
    all.set(key, b);
    if (all.size > MAX_STDIO_BREAKERS) all.delete(all.keys().next().value as string);
  }
  return b;
}

/** The turn a connection is for. */
interface TurnOf { agent: CompiledAgent; adm: Admission }

/** A stdio server's connection for this turn: its process in the session's sandbox, ended with `lifetime`. */
function stdioConnectionOf(d: McpTurnDeps, { agent, adm }: TurnOf, server: Server, sandbox: SessionSandbox, lifetime: AbortSignal): McpConnection {
  const breaker = stdioBreaker(d, agent, adm, server);
  const conn = new McpConnection(settingsOf(server), {
    headers: () => Promise.resolve({}), fetch: noFetch, now: d.mcp.now,
    env: () => secretValues(d.secrets, agent, server.envRefs, 'env'),
    openStdio: (env) => sandboxStdioOpener(sandbox, { command: server.command ?? '', ...(server.args ? { args: server.args } : {}) }, lifetime, env),
    ...(d.mcp.breaker ? { breaker: d.mcp.breaker } : {}),
    ...(breaker ? { sharedBreaker: breaker } : {}),
  });
  if (lifetime.aborted) void conn.close();
  else lifetime.addEventListener('abort', () => { void conn.close(); }, { once: true });
  return conn;
}

export interface TurnMcpTools {
  tools: Tool[];
  /** The tools' fingerprint (prompt identity); absent when there are none. */
  version?: string;
}

export interface TurnMcpOptions {
  perms?: Permissions;
  /** Aborts connecting (the turn's fence). */
  signal?: AbortSignal;
  /** Aborted when the turn ends: its stdio servers' processes end then. */
  turnEnded?: AbortSignal;
  /** The platform whose toolsets narrowing applies (default: the turn's own; a child: its parent's). */
  platform?: string;
}

/** The connection of `s` for this turn, or why there is none (a stdio server without a sandbox, an HTTP one without the guard). */
function turnConnection(d: McpTurnDeps, turn: TurnOf, s: Server, opts: TurnMcpOptions, box: () => SessionSandbox | undefined): McpConnection | string {
  if (s.transport !== 'stdio') return d.guard ? connectionOf({ ...d, guard: d.guard }, turn.agent, s) : 'this worker has no SSRF guard for MCP requests';
  const sandbox = box();
  if (!sandbox) return 'a stdio server runs only in the session\'s sandbox, and this agent has none here';
  const lifetime = AbortSignal.any([...(opts.signal ? [opts.signal] : []), ...(opts.turnEnded ? [opts.turnEnded] : [])]);
  return stdioConnectionOf(d, turn, s, sandbox, lifetime);
}

/** The MCP tools this turn offers (a server that cannot be reached offers its last known tools, or none). */
export async function turnMcpTools(d: McpTurnDeps, agent: CompiledAgent, adm: Admission, opts: TurnMcpOptions = {}): Promise<TurnMcpTools> {
  const servers = (agent.mcpServers ?? []).filter((s) => serverOffered(agent, opts.platform ?? adm.platform, opts.perms, s));
  if (!servers.length) return { tools: [] };
  let sandbox: SessionSandbox | undefined | null = null;
  const box = () => (sandbox === null ? (sandbox = d.sandboxes ? sessionSandboxOf(d.sandboxes, agent, adm, STDERR_CHARS) : undefined) : sandbox);
  const lists = await Promise.all(servers.map(async (s) => {
    const conn = turnConnection(d, { agent, adm }, s, opts, box);
    if (typeof conn === 'string') {
      d.log.warn({ agent: agent.agent, server: s.name, why: conn }, 'MCP server is not offered');
      return undefined;
    }
    const listed = await mcpWantedTools(conn, opts.signal);
    if (!conn.connected) d.log.warn({ agent: agent.agent, server: s.name, tools: listed.length, why: conn.breaker.refusal() }, 'MCP server is unreachable; its last known tools are offered');
    return { conn, listed };
  }));
  // Names are given across all servers at once: two tools that would share a name get distinct ones.
  const offered = lists.filter((l) => l !== undefined);
  const names = mcpToolNames(offered.flatMap(({ conn, listed }) => listed.map((t) => ({ server: conn.server.name, tool: t.name }))));
  const nameOf = (server: string) => (tool: string) => names.get(mcpToolRefKey({ server, tool }))!;
  const tools = offered.flatMap(({ conn, listed }) => mcpModelTools(conn, listed, nameOf(conn.server.name))).sort((a, b) => a.name.localeCompare(b.name));
  return tools.length ? { tools, version: toolsFingerprint(tools) } : { tools };
}

/** {@link turnMcpTools} where the worker has a pool and the agent names servers; else none. */
export function mcpToolsOf(loop: { mcp?: McpDeps; webGuard?: UrlGuard; sandboxes?: SandboxBackends }, deps: { secrets: SecretResolver; log: Logger }, agent: CompiledAgent, adm: Admission,
  opts: TurnMcpOptions = {}): Promise<TurnMcpTools> {
  if (!loop.mcp || !agent.mcpServers?.length) return Promise.resolve({ tools: [] });
  return turnMcpTools({
    mcp: loop.mcp, secrets: deps.secrets, log: deps.log, ...(loop.webGuard ? { guard: loop.webGuard } : {}), ...(loop.sandboxes ? { sandboxes: loop.sandboxes } : {}),
  }, agent, adm, opts);
}

/** Characters of a stdio server's stderr kept by its channel. */
const STDERR_CHARS = 16_000;
