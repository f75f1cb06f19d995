// Profile spec.mcpServers → the compiled server list: enabled HTTP/SSE servers with their header
// values as Secret references. A stdio server cannot run yet (it would need the sandbox's channel,
// and it never runs in the worker): compile refuses it, which the Agent's Ready condition shows,
// for manifests that got past the schema's rule (a CRD from before the rule).
import type { CompiledAgent } from '../services/core/index.js';
import { stdioRefusal, type McpServerSpec } from './api/mcp.js';
import type { Profile } from './api/profile.js';
import { CompileError } from './compile-error.js';

type Server = NonNullable<CompiledAgent['mcpServers']>[number];

function compileServer(s: McpServerSpec): Server {
  if (s.transport === 'stdio' || s.command !== undefined) throw new CompileError('InvalidProfile', `MCP server "${s.name}": ${stdioRefusal}.`);
  if (!s.url) throw new CompileError('InvalidProfile', `MCP server "${s.name}" needs url.`);
  const headers = Object.entries(s.headers ?? {});
  return {
    name: s.name, transport: s.transport, url: s.url,
    ...(headers.length ? { headerRefs: Object.fromEntries(headers.map(([h, v]) => [h, { name: v.secretKeyRef.name, key: v.secretKeyRef.key }])) } : {}),
    ...(s.tools?.include ? { include: s.tools.include } : {}),
    ...(s.tools?.exclude?.length ? { exclude: s.tools.exclude } : {}),
    ...(s.timeout ? { timeoutSeconds: s.timeout } : {}),
    ...(s.connectTimeout ? { connectTimeoutSeconds: s.connectTimeout } : {}),
  };
}

export function mcpFields(p: Profile['spec']): Partial<CompiledAgent> {
  const all = (p.mcpServers ?? []).map((s) => ({ s, compiled: compileServer(s) }));
  const servers = all.filter(({ s }) => s.enabled).map(({ compiled }) => compiled);
  return servers.length ? { mcpServers: servers } : {};
}
