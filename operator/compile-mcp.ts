// Profile spec.mcpServers → the compiled server list: enabled servers, HTTP/SSE ones with their
// header values as Secret references, stdio ones with command, args and env values as Secret
// references. A stdio server runs only in the session's sandbox (never in the worker): without
// spec.sandbox compile refuses it, which the Agent's Ready condition shows, for manifests that
// got past the schema's rule (a CRD from before the rule).
import type { CompiledAgent } from '../services/core/index.js';
import { stdioNeedsSandbox, type McpServerSpec } from './api/mcp.js';
import type { Profile } from './api/profile.js';
import { CompileError } from './compile-error.js';

type Server = NonNullable<CompiledAgent['mcpServers']>[number];

const refs = (m: Record<string, { secretKeyRef: { name: string; key: string } }> | undefined) =>
  Object.fromEntries(Object.entries(m ?? {}).map(([k, v]) => [k, { name: v.secretKeyRef.name, key: v.secretKeyRef.key }]));

function endpoint(s: McpServerSpec, sandboxed: boolean): Pick<Server, 'transport' | 'url' | 'command' | 'args' | 'envRefs' | 'headerRefs'> {
  if (s.transport === 'stdio') {
    if (!sandboxed) throw new CompileError('InvalidProfile', `MCP server "${s.name}": ${stdioNeedsSandbox}.`);
    if (!s.command) throw new CompileError('InvalidProfile', `MCP server "${s.name}" (transport stdio) needs command.`);
    const env = refs(s.env);
    return { transport: 'stdio', command: s.command, ...(s.args?.length ? { args: s.args } : {}), ...(Object.keys(env).length ? { envRefs: env } : {}) };
  }
  if (s.command !== undefined || s.args !== undefined || s.env !== undefined) throw new CompileError('InvalidProfile', `MCP server "${s.name}": command, args and env are for transport stdio.`);
  if (!s.url) throw new CompileError('InvalidProfile', `MCP server "${s.name}" needs url.`);
  const headers = refs(s.headers);
  return { transport: s.transport, url: s.url, ...(Object.keys(headers).length ? { headerRefs: headers } : {}) };
}

function compileServer(s: McpServerSpec, sandboxed: boolean): Server {
  return {
    name: s.name, ...endpoint(s, sandboxed),
    ...(s.tools?.include ? { include: s.tools.include } : {}),
    ...(s.tools?.exclude?.length ? { exclude: s.tools.exclude } : {}),
    ...(s.timeout ? { timeoutSeconds: s.timeout } : {}),
    ...(s.connectTimeout ? { connectTimeoutSeconds: s.connectTimeout } : {}),
  };
}

export function mcpFields(p: Profile['spec']): Partial<CompiledAgent> {
  const all = (p.mcpServers ?? []).map((s) => ({ s, compiled: compileServer(s, p.sandbox !== undefined) }));
  const servers = all.filter(({ s }) => s.enabled).map(({ compiled }) => compiled);
  return servers.length ? { mcpServers: servers } : {};
}
