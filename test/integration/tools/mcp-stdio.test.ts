// stdio MCP servers on the bubblewrap backend: a real stdio server built with the SDK
// (test/support/stdio-mcp-server.ts) runs as a process of the session's sandbox, reached over the
// sandbox's line channel (SandboxChannelTransport) — never in the worker: its file exists only in
// the workspace, it sees the sandbox's pid namespace, hostname and /workspace, and nothing of the
// worker's environment. Its env values (from Secrets) are masked in error text; a crash is a clear
// tool error naming its stderr, and the next call starts it again (after the breaker's backoff).
import { existsSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { McpConnection, mcpServerTools, sandboxStdioOpener, type Tool } from '../../../services/agent/index.js';
import type { SandboxChannel } from '../../../services/sandbox/index.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';
import { STDIO_SERVER_PATH, STDIO_SERVER_REL, stdioMcpServerSource } from '../../support/stdio-mcp.js';
import { callJson, toolContext } from './helpers.js';

const SECRET = 'stdio-secret-value-31415926';
let box: TestSessionSandbox;
let now = 1_000_000;
const opened: McpConnection[] = [];
const turn = new AbortController();
const channels: SandboxChannel[] = [];

beforeAll(async () => {
  box = await testSessionSandbox();
  await box.put(STDIO_SERVER_REL, await stdioMcpServerSource());
});
afterEach(async () => { await Promise.all(opened.splice(0).map((c) => c.close())); });
afterAll(async () => { turn.abort(); await box?.cleanup(); });

function connection(server: { command: string; args?: string[] } = { command: 'node', args: [STDIO_SERVER_PATH] }): McpConnection {
  const conn = new McpConnection({ name: 'local', transport: 'stdio', connectTimeoutMs: 20_000, callTimeoutMs: 20_000 }, {
    headers: () => Promise.reject(new Error('a stdio server has no headers')),
    env: () => Promise.resolve({ HERMES_TEST_TOKEN: SECRET }),
    openStdio: (env) => {
      const open = sandboxStdioOpener(box, server, turn.signal, env);
      return async (onLine) => { const ch = await open(onLine); channels.push(ch); return ch; };
    },
    fetch: () => Promise.reject(new Error('a stdio server makes no HTTP requests')),
    now: () => now,
  });
  opened.push(conn);
  return conn;
}

const byName = (tools: Tool[], name: string) => tools.find((t) => t.name === name)!;
const run = (tools: Tool[], name: string, args: Record<string, unknown> = {}) => callJson(byName(tools, name), args, toolContext());
const starts = async () => (await box.run({ command: 'cat /workspace/.stdio-mcp/starts' }, turn.signal)).output.trim().split('\n').filter(Boolean).length;

describe('MCP stdio servers in the sandbox (bubblewrap)', () => {
  it('lists and calls the tools of a server that runs inside the session\'s sandbox, never in the worker', async () => {
    expect(existsSync(STDIO_SERVER_PATH)).toBe(false); // the script exists only inside the sandbox
    const conn = connection();
    const tools = await mcpServerTools(conn);
    expect(tools.map((t) => t.name)).toEqual(['mcp_local_crash', 'mcp_local_echo', 'mcp_local_leak', 'mcp_local_where']);
    expect(byName(tools, 'mcp_local_echo').toolset).toBe('mcp-local');
    expect(await run(tools, 'mcp_local_echo', { text: 'hi' })).toEqual({ result: 'echo: hi' });
    const where = JSON.parse((await run(tools, 'mcp_local_where')).result as string) as Record<string, unknown>;
    expect(where).toMatchObject({ hostname: 'sandbox', cwd: '/workspace', argv1: STDIO_SERVER_PATH, token: SECRET, home: '/workspace', workerEnv: [] });
    expect(where.pid).not.toBe(process.pid);
    // its own pid namespace: pid 1 is bubblewrap's, not the host's init, and the worker's pid is not visible
    expect(where.init).toContain('bwrap');
    const seen = await box.run({ command: `test -e /proc/${process.pid}/cmdline && echo visible || echo hidden` }, turn.signal);
    expect(seen.output.trim()).toBe('hidden');
    expect(box.calls.some((c) => c.command === `exec 'node' '${STDIO_SERVER_PATH}'`)).toBe(true);
  });

  it('masks the env values from Secrets in error text', async () => {
    const tools = await mcpServerTools(connection());
    const r = await run(tools, 'mcp_local_leak');
    expect(JSON.stringify(r)).not.toContain(SECRET);
    expect(r.error).toContain('bad token [REDACTED]');
  });

  it('a crash is a clear tool error naming the exit and stderr; the next call starts the server again', async () => {
    const conn = connection();
    const tools = await mcpServerTools(conn);
    const before = await starts();
    const crashed = await run(tools, 'mcp_local_crash');
    expect(crashed.error).toContain('MCP server local failed: the stdio server process exited with code 3 (stderr: stdio-fake: crashing on request)');
    expect(crashed.error).toContain('it is reconnected on the next call');
    expect(conn.connected).toBe(false);
    // within the backoff nothing is started; after it the next call starts a new process
    expect((await run(tools, 'mcp_local_echo', { text: 'x' })).error).toContain('next attempt in 1 s');
    now += 1_000;
    expect(await run(tools, 'mcp_local_echo', { text: 'again' })).toEqual({ result: 'echo: again' });
    expect(await starts()).toBe(before + 1);
  });

  it('a command that cannot start is a connect failure with its stderr (and offers no tools)', async () => {
    const conn = connection({ command: 'no-such-mcp-server' });
    expect(await mcpServerTools(conn)).toEqual([]);
    expect(conn.breaker.refusal()).toContain('exited with code 127');
    expect(conn.breaker.refusal()).toContain('no-such-mcp-server');
  });

  it('closing the connection ends the server process', async () => {
    const conn = connection();
    expect(await run(await mcpServerTools(conn), 'mcp_local_echo', { text: 'up' })).toEqual({ result: 'echo: up' });
    const channel = channels.at(-1)!;
    await conn.close();
    const ended = await channel.done;
    expect(ended.status).toMatch(/interrupted|ok/);
  });
});
