// A stdio MCP server in real worker turns (Postgres, Redis, the fake model, the bubblewrap
// backend through the worker's counted backends): the server (built with the SDK,
// test/support/stdio-mcp-server.ts) runs in the session's sandbox, started per turn, with its
// env value read from a Secret; its file exists only in the session's workspace. A server that
// cannot start offers nothing and the turn still answers; a crash is the call's clear error and the
// next turn starts it again; no server process outlives its turn.
import { chown, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledAgent } from '../../../services/core/index.js';
import { ensureWorkspaceDir } from '../../../services/sandbox/index.js';
import { createMcpDeps, type RunningWorker } from '../../../services/worker/index.js';
import { lastUser, startFakeOpenAI, toldResult, toolsAsTold, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { STDIO_SERVER_PATH, STDIO_SERVER_REL, stdioMcpServerSource } from '../../support/stdio-mcp.js';
import { createTestAgent, openTestRuntime, runTurn, startTestWorker, type TestRuntime } from '../../support/system.js';
import { bubblewrapWorkspaces, type BubblewrapWorkspaces } from '../../support/workspaces.js';

const TOKEN = 'stdio-env-secret-271828';
const SANDBOX_UID = 65534;
let now = 1_000_000;
let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let ws: BubblewrapWorkspaces;

const sandbox: CompiledAgent['sandbox'] = { backend: 'bubblewrap', mode: 'call', timeoutSeconds: 60, workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none', allow: [] } };
const servers: CompiledAgent['mcpServers'] = [{ name: 'local', transport: 'stdio', command: 'node', args: [STDIO_SERVER_PATH], envRefs: { HERMES_TEST_TOKEN: { name: 'mcp', key: 'token' } } }];

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(toolsAsTold);
  rt = await openTestRuntime(testConfig(database.url));
  ws = await bubblewrapWorkspaces('mcp');
  worker = await startTestWorker(rt, {
    loop: { mcp: createMcpDeps({ now: () => now }), sandboxes: ws.backends(rt) },
    secrets: [{ namespace: 'default', name: 'mcp', data: { token: TOKEN } }],
  });
});

afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
  await ws?.remove();
});

const offered = (content: string) => {
  const req = model.requests.filter((r) => lastUser(r.body) === content).at(-1);
  return (req?.body.tools ?? []).map((t) => t.function.name).filter((n) => n.startsWith('mcp_')).sort();
};

/** Host processes running the server's file (a path that exists only inside the sandbox). */
async function serverProcesses(): Promise<number[]> {
  const pids: number[] = [];
  for (const pid of (await readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.split('\0').includes(STDIO_SERVER_PATH)) pids.push(Number(pid));
  }
  return pids;
}

describe('stdio MCP servers in worker turns (bubblewrap)', () => {
  it('runs the server in the session\'s sandbox per turn: tools listed and called, env from the Secret, crash → error, next turn starts it again', async () => {
    const agentId = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'stdio-user' }, sandbox, mcpServers: servers });
    const sessionKey = `${agentId}:u`;
    const say = (content: string) => runTurn(rt, { agentId, sessionKey, content });

    // No server file in the workspace yet: the process exits, nothing is offered, the turn answers.
    const first = await say('hello');
    expect(first.reply).toBe('ok');
    expect(offered('hello')).toEqual([]);

    // The server exists only in this session's workspace (never on the worker's side of the sandbox).
    const session = { namespace: 'default', agent: 'stdio-user', sessionId: first.a.sessionId, admissionId: first.a.id };
    const root = ensureWorkspaceDir(ws.dir, session, process.getuid?.() === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : undefined);
    const file = join(root, STDIO_SERVER_REL);
    await import('node:fs/promises').then((fs) => fs.mkdir(dirname(file), { recursive: true }));
    await writeFile(file, await stdioMcpServerSource());
    if (process.getuid?.() === 0) { await chown(dirname(file), SANDBOX_UID, SANDBOX_UID); await chown(file, SANDBOX_UID, SANDBOX_UID); }
    now += 5_000; // past the breaker's backoff after the failed start

    const where = 'tool mcp_local_where {}';
    const seen = JSON.parse(toldResult((await say(where)).reply).result as string) as Record<string, unknown>;
    expect(offered(where)).toEqual(['mcp_local_crash', 'mcp_local_echo', 'mcp_local_leak', 'mcp_local_where']);
    expect(seen).toMatchObject({ hostname: 'sandbox', cwd: '/workspace', argv1: STDIO_SERVER_PATH, token: TOKEN, workerEnv: [] });
    expect(seen.init).toContain('bwrap');

    const leak = toldResult((await say('tool mcp_local_leak {}')).reply);
    expect(leak.error).toContain('bad token [REDACTED]');
    expect(JSON.stringify(leak)).not.toContain(TOKEN);

    const crash = toldResult((await say('tool mcp_local_crash {}')).reply);
    expect(crash.error).toMatch(/MCP server local failed: the stdio server process exited with code 3 \(stderr: stdio-fake: crashing on request\)/);

    now += 5_000;
    const echo = `tool mcp_local_echo ${JSON.stringify({ text: 'back' })}`;
    expect(toldResult((await say(echo)).reply)).toEqual({ result: 'echo: back' });
    const starts = (await readFile(join(root, '.stdio-mcp/starts'), 'utf8')).trim().split('\n');
    expect(starts).toHaveLength(4); // one process per turn that listed its tools
    // No server process outlives its turn.
    await eventually(async () => (await serverProcesses()).length === 0, 'the turns\' server processes ended');
  });

  it('offers nothing from a stdio server when the agent has no sandbox, and the turn still answers', async () => {
    const agentId = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'stdio-nobox' }, mcpServers: servers });
    const msg = 'tool mcp_local_echo {}';
    const { reply } = await runTurn(rt, { agentId, sessionKey: `${agentId}:u`, content: msg });
    expect(offered(msg)).toEqual([]);
    expect(reply).toMatch(/Unknown tool|mcp_local_echo/);
  });
});
