// Profile spec.mcpServers: URL required for http and sse, header values only from Secrets
// ({name, key}), unique server names, stdio servers (command, args, env from Secrets) accepted
// only with a command, no url, and a Profile sandbox (they run in it, never in the worker) — by
// the schema and by compile — and the compiled form: header and env values as references,
// disabled servers left out.
import { describe, expect, it } from 'vitest';
import { agentSchema, compileAgent, profileSchema, staticConfigMaps } from '../../../operator/index.js';
import { compiledAgentSchema } from '../../../services/core/index.js';
import { mcpFields } from '../../../operator/compile-mcp.js';

const meta = { name: 'p', namespace: 'ns' };
const profile = (mcpServers: unknown, more: Record<string, unknown> = {}) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: meta, spec: { model: { provider: 'openai', model: 'gpt-4o' }, mcpServers, ...more } });
const issues = (mcpServers: unknown, more: Record<string, unknown> = {}) => {
  const r = profile(mcpServers, more);
  return r.success ? [] : r.error.issues.map((i) => i.message);
};
const agent = agentSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'ns' }, spec: { profileRef: { name: 'p' } } });
const sources = { secrets: { value: async () => 'secret-value' }, configMaps: staticConfigMaps([]) };

describe('Profile spec.mcpServers', () => {
  it('needs a url for http and sse servers', () => {
    expect(issues([{ name: 'gh' }])).toContain('an MCP server with transport http or sse needs url');
    expect(issues([{ name: 'gh', transport: 'sse' }])).toContain('an MCP server with transport http or sse needs url');
    expect(issues([{ name: 'gh', url: 'https://mcp.example/mcp' }])).toEqual([]);
  });

  it('accepts a stdio server with command, args and env from Secrets when the Profile has a sandbox', () => {
    const fs = { name: 'fs', transport: 'stdio', command: 'npx', args: ['server-fs', '/workspace'], env: { API_TOKEN: { secretKeyRef: { name: 'fs', key: 'token' } } } };
    expect(issues([fs], { sandbox: {} })).toEqual([]);
  });

  it('refuses a stdio server without a sandbox, without command, with url or headers, and command/env on http', () => {
    const sandbox = { sandbox: {} };
    expect(issues([{ name: 'fs', transport: 'stdio', command: 'npx' }]).join(' | ')).toMatch(/stdio MCP servers \(transport stdio\) run only inside the session's sandbox, never in the worker: set spec.sandbox/);
    expect(issues([{ name: 'fs', transport: 'stdio' }], sandbox)).toContain('an MCP server with transport stdio needs command');
    expect(issues([{ name: 'fs', transport: 'stdio', command: 'npx', url: 'https://x.example' }], sandbox).join(' | ')).toMatch(/transport stdio takes no url or headers/);
    expect(issues([{ name: 'fs', transport: 'stdio', command: 'npx', headers: { A: { secretKeyRef: { name: 'a', key: 'b' } } } }], sandbox).join(' | ')).toMatch(/transport stdio takes no url or headers/);
    expect(issues([{ name: 'fs', command: 'npx', url: 'https://x.example' }], sandbox).join(' | ')).toMatch(/command, args and env are for transport stdio/);
    expect(issues([{ name: 'fs', transport: 'stdio', command: 'npx', env: { TOKEN: 'inline' } }], sandbox)).not.toEqual([]);
    expect(issues([{ name: 'fs', transport: 'stdio', command: 'npx', env: { TOKEN: { env: 'HOST_TOKEN' } } }], sandbox)).not.toEqual([]);
    expect(issues([{ name: 'fs', transport: 'stdio', command: 'npx', env: { 'BAD-NAME': { secretKeyRef: { name: 'a', key: 'b' } } } }], sandbox)).not.toEqual([]);
  });

  it('takes header values only from Secrets ({name, key}), never inline or env', () => {
    expect(issues([{ name: 'gh', url: 'https://x.example', headers: { Authorization: { secretKeyRef: { name: 'gh', key: 'token' } } } }])).toEqual([]);
    expect(issues([{ name: 'gh', url: 'https://x.example', headers: { Authorization: 'Bearer inline' } }])).not.toEqual([]);
    expect(issues([{ name: 'gh', url: 'https://x.example', headers: { Authorization: { env: 'GH_TOKEN' } } }])).not.toEqual([]);
    expect(issues([{ name: 'gh', url: 'https://x.example', headers: { Authorization: { secretKeyRef: { name: 'gh' } } } }])).not.toEqual([]);
    expect(issues([{ name: 'gh', url: 'https://x.example', headers: { 'bad header': { secretKeyRef: { name: 'gh', key: 'k' } } } }])).not.toEqual([]);
  });

  it('wants unique names that fit in tool names', () => {
    expect(issues([{ name: 'gh', url: 'https://a.example' }, { name: 'gh', url: 'https://b.example' }])).toContain('MCP server names must be unique ("gh" appears twice)');
    expect(issues([{ name: 'GitHub', url: 'https://a.example' }])).not.toEqual([]);
    expect(issues([{ name: 'x'.repeat(33), url: 'https://a.example' }])).not.toEqual([]);
  });

  it('compiles header values as references, timeouts and filters, and leaves disabled servers out', async () => {
    const p = profile([
      { name: 'gh', url: 'https://mcp.example/mcp', headers: { Authorization: { secretKeyRef: { name: 'gh', key: 'token' } } }, tools: { include: ['search'], exclude: ['delete'] }, timeout: 120, connectTimeout: 10 },
      { name: 'old', transport: 'sse', url: 'https://sse.example/sse', enabled: false },
    ]);
    expect(p.success).toBe(true);
    const compiled = compiledAgentSchema.parse(await compileAgent(agent, p.data!, sources));
    expect(compiled.mcpServers).toEqual([{
      name: 'gh', transport: 'http', url: 'https://mcp.example/mcp', headerRefs: { Authorization: { name: 'gh', key: 'token' } },
      include: ['search'], exclude: ['delete'], timeoutSeconds: 120, connectTimeoutSeconds: 10,
    }]);
    expect(JSON.stringify(compiled)).not.toContain('secret-value');
  });

  it('compiles a stdio server: command, args and env values as references', async () => {
    const p = profile([{ name: 'fs', transport: 'stdio', command: 'node', args: ['/workspace/server.mjs'], env: { API_TOKEN: { secretKeyRef: { name: 'fs', key: 'token' } } }, tools: { exclude: ['rm'] } }],
      { sandbox: { backend: 'bubblewrap' } });
    expect(p.success).toBe(true);
    const compiled = compiledAgentSchema.parse(await compileAgent(agent, p.data!, sources));
    expect(compiled.mcpServers).toEqual([{ name: 'fs', transport: 'stdio', command: 'node', args: ['/workspace/server.mjs'], envRefs: { API_TOKEN: { name: 'fs', key: 'token' } }, exclude: ['rm'] }]);
    expect(JSON.stringify(compiled)).not.toContain('secret-value');
  });

  it('compile refuses a stdio server without a sandbox that got past the schema (a manifest applied before the rule)', () => {
    const spec = { mcpServers: [{ name: 'fs', transport: 'stdio', command: 'npx', enabled: true }] } as unknown as Parameters<typeof mcpFields>[0];
    expect(() => mcpFields(spec)).toThrow(/MCP server "fs": stdio MCP servers \(transport stdio\) run only inside the session's sandbox, never in the worker: set spec.sandbox/);
    const onHttp = { mcpServers: [{ name: 'gh', transport: 'http', url: 'https://x.example', command: 'npx', enabled: true }] } as unknown as Parameters<typeof mcpFields>[0];
    expect(() => mcpFields(onHttp)).toThrow(/command, args and env are for transport stdio/);
  });
});
