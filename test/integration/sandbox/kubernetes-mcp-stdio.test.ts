// A stdio MCP server on the kubernetes backend, against a real kube-apiserver and the test
// kubelet: the server (built with the SDK, test/support/stdio-mcp-server.ts) is written into the
// session's workspace by a sandbox command, then runs by pods/exec in a Pod that only waits, its
// stdin and stdout carrying the JSON-RPC lines; a crash is a clear error and the next call starts
// a new Pod; closing the connection deletes its Pod.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpConnection, mcpServerTools, sandboxStdioOpener, type Tool } from '../../../services/agent/index.js';
import { bindSession, type SessionSandbox } from '../../../services/sandbox/index.js';
import { startSandboxPlane, waitFor, type SandboxPlane } from '../../support/kube/index.js';
import { testSession } from '../../support/sandbox-request.js';
import { STDIO_SERVER_PATH, STDIO_SERVER_REL, stdioMcpServerSource } from '../../support/stdio-mcp.js';
import { callJson, toolContext } from '../tools/helpers.js';

const SECRET = 'k8s-stdio-secret-1618';

describe('stdio MCP server on the kubernetes sandbox', () => {
  let plane: SandboxPlane;
  let now = 1_000_000;
  const turn = new AbortController();

  beforeAll(async () => { plane = await startSandboxPlane(); });

  afterAll(async () => {
    turn.abort();
    await plane?.stop();
  });

  it('lists and calls the server\'s tools over pods/exec; a crash → a clear error and a new process; close deletes the Pod', async () => {
    const ns = await plane.cp.createNamespace('mcpstdio');
    const box: SessionSandbox = bindSession(plane.sandbox, {
      session: testSession(ns), workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none', allow: [] }, timeoutSeconds: 60, maxOutputChars: 100_000,
    });
    const put = await box.run({ command: `mkdir -p .stdio-mcp && cat > ${STDIO_SERVER_REL}`, stdin: await stdioMcpServerSource() }, turn.signal);
    expect(put.exitCode, `${put.output} ${put.reason ?? ""}`).toBe(0);

    const conn = new McpConnection({ name: 'local', transport: 'stdio', connectTimeoutMs: 60_000, callTimeoutMs: 60_000 }, {
      headers: () => Promise.resolve({}), fetch: () => Promise.reject(new Error('no HTTP')), now: () => now,
      env: () => Promise.resolve({ HERMES_TEST_TOKEN: SECRET }),
      openStdio: (env) => sandboxStdioOpener(box, { command: 'node', args: [STDIO_SERVER_PATH] }, turn.signal, env),
    });
    try {
      const tools = await mcpServerTools(conn);
      const run = (name: string, args: Record<string, unknown> = {}) => callJson(tools.find((t: Tool) => t.name === name)!, args, toolContext());
      expect(tools.map((t) => t.name)).toEqual(['mcp_local_crash', 'mcp_local_echo', 'mcp_local_leak', 'mcp_local_where']);
      expect(await run('mcp_local_echo', { text: 'pod' })).toEqual({ result: 'echo: pod' });
      const where = JSON.parse((await run('mcp_local_where')).result as string) as Record<string, unknown>;
      expect(where).toMatchObject({ argv1: STDIO_SERVER_PATH, token: SECRET, workerEnv: [] });
      expect(where.pid).not.toBe(process.pid);
      expect(await plane.sandboxPods(ns)).toBe(1);

      const crashed = await run('mcp_local_crash');
      expect(crashed.error).toContain('MCP server local failed: the stdio server process exited with code 3 (stderr: stdio-fake: crashing on request)');
      now += 1_000;
      expect(await run('mcp_local_echo', { text: 'again' })).toEqual({ result: 'echo: again' });
    } finally {
      await conn.close();
    }
    await waitFor(async () => ((await plane.sandboxPods(ns)) === 0 ? true : undefined), { what: 'the server Pods to be deleted', timeoutMs: 30_000 });
  });
});
