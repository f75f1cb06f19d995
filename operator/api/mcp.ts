// Profile spec.mcpServers: the MCP servers whose tools the agent gets (Hermes' `mcp_servers`),
// reached by the worker over streamable HTTP or SSE with headers from Secrets, or — stdio servers
// (command, args, env from Secrets) — run as a process in the session's sandbox, never in the
// worker: a Profile with a stdio server needs spec.sandbox.
import { z } from 'zod';
import { boundedRecord, doc, envVarName, secretKeySelectorSchema, specLimits, withRules, type Rule } from './common.js';

/** Server names become part of tool names (mcp_<server>_<tool>): short, lower case. */
export const mcpServerName = /^[a-z0-9]([a-z0-9_-]{0,30}[a-z0-9])?$/;

/** Why a stdio server is refused where there is no sandbox (CEL rule and compile). */
export const stdioNeedsSandbox = 'stdio MCP servers (transport stdio) run only inside the session\'s sandbox, never in the worker: set spec.sandbox, '
  + 'or use a server reachable over HTTP (url with transport http or sse)';

export const mcpServerSchema = withRules(z.object({
  name: z.string().max(32).regex(mcpServerName, 'lower-case letters, digits, - and _ (at most 32)').describe('The server\'s name: its tools reach the model as mcp_<name>_<tool>, in toolset mcp-<name>.'),
  transport: z.enum(['http', 'sse', 'stdio']).default('http').describe('http: streamable HTTP (the current MCP transport); sse: the older HTTP+SSE transport; stdio: a process (command, args) in the session\'s sandbox, talking MCP on its stdin/stdout; needs spec.sandbox.'),
  url: z.string().max(specLimits.url).url().optional().describe('The server\'s endpoint (required for http and sse). Passes the SSRF guard like every web fetch: a private address is reachable only inside the install\'s HERMES_WEB_ALLOW_CIDRS.'),
  command: z.string().min(1).max(4_096).optional().describe('stdio servers (required): the program, run inside the session\'s sandbox (found on its PATH or by absolute path, e.g. in /workspace or the sandbox image); never in the worker.'),
  args: z.array(z.string().max(4_096)).max(64).optional().describe('stdio servers: the program\'s arguments, each passed as one word (no shell).'),
  env: boundedRecord(z.string().max(specLimits.envName).regex(envVarName, 'an environment variable name'), z.object({
    secretKeyRef: secretKeySelectorSchema.describe('The variable\'s value: a key of a Secret in the Profile\'s namespace.'),
  }).strict()).optional().describe('stdio servers: environment variables of the server process, each value from a Secret (read at each start, masked in every error text). They reach the sandbox, where the server runs; the worker\'s own environment never does.'),
  headers: boundedRecord(z.string().max(256).regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'an HTTP header name'), z.object({
    secretKeyRef: secretKeySelectorSchema.describe('The header\'s value: a key of a Secret in the Profile\'s namespace.'),
  }).strict()).optional().describe('Request headers (e.g. Authorization), each value from a Secret; read by the worker at connect, masked in every error text, never in the sandbox.'),
  tools: z.object({
    include: z.array(z.string().min(1).max(specLimits.token)).max(256).optional().describe('Only these tools of the server (its names, without the mcp_<server>_ prefix).'),
    exclude: z.array(z.string().min(1).max(specLimits.token)).max(256).optional().describe('Never these tools (applied after include).'),
  }).optional().describe('Which of the server\'s tools the agent gets (default: all).'),
  enabled: z.boolean().default(true).describe('false: the server is kept in the manifest but not connected.'),
  timeout: z.number().int().min(1).max(3_600).optional().describe('Seconds one tool call may take (default 300).'),
  connectTimeout: z.number().int().min(1).max(600).optional().describe('Seconds connecting and listing tools may take (default 60).'),
}), [{
  rule: 'self.transport == \'stdio\' || has(self.url)',
  message: 'an MCP server with transport http or sse needs url',
  check: (s) => s.transport === 'stdio' || s.url !== undefined,
}, {
  rule: 'self.transport == \'stdio\' || (!has(self.command) && !has(self.args) && !has(self.env))',
  message: 'command, args and env are for transport stdio (a process in the sandbox); an http or sse server takes url and headers',
  check: (s) => s.transport === 'stdio' || (s.command === undefined && s.args === undefined && s.env === undefined),
}, {
  rule: 'self.transport != \'stdio\' || has(self.command)',
  message: 'an MCP server with transport stdio needs command',
  check: (s) => s.transport !== 'stdio' || s.command !== undefined,
}, {
  rule: 'self.transport != \'stdio\' || (!has(self.url) && !has(self.headers))',
  message: 'an MCP server with transport stdio takes no url or headers (it runs in the sandbox; give it env from Secrets instead)',
  check: (s) => s.transport !== 'stdio' || (s.url === undefined && s.headers === undefined),
}]);
export type McpServerSpec = z.infer<typeof mcpServerSchema>;

/** The list, keyed by name (the apiserver refuses two servers of the same name; `hermes dev` too). */
export const mcpServersSchema = doc(z.array(mcpServerSchema).max(16)
  .superRefine((list, ctx) => {
    const names = list.map((s) => s.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) ctx.addIssue({ code: 'custom', message: `MCP server names must be unique ("${twice}" appears twice)` });
  })
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] }),
'MCP servers whose tools the agent gets (Hermes\' mcp_servers): streamable HTTP or SSE with headers from Secrets, or stdio processes in the session\'s sandbox (needs spec.sandbox); tools named mcp_<server>_<tool>. '
  + 'Each server is a toolset mcp-<name>, offered unless team-mode permissions or the platform narrow the toolsets.');

/** Profile spec: a stdio server runs in the session's sandbox, so the Profile needs one. */
export const stdioNeedsSandboxRule: Rule<{ mcpServers?: McpServerSpec[] | undefined; sandbox?: unknown }> = {
  rule: '!has(self.mcpServers) || !self.mcpServers.exists(s, s.transport == \'stdio\') || has(self.sandbox)',
  message: stdioNeedsSandbox,
  check: (s) => !(s.mcpServers ?? []).some((m) => m.transport === 'stdio') || s.sandbox !== undefined,
};
