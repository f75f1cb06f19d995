// Sandboxed tools through the whole path (ledger → worker → loop → bubblewrap): the agent's
// Profile decides whether file tools are offered, each session has its own workspace, writes
// take checkpoints, and `/rollback` lists and restores them without a model call. execute_code
// runs its script in the session's workspace with the Profile's limits (spec.codeExecution).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledAgent } from '../../../services/core/index.js';
import { SESSION_CWD_DIR, workspaceDir } from '../../../services/sandbox/index.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../../support/services.js';
import { lastUser, startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, runTurn, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { bubblewrapWorkspaces, type BubblewrapWorkspaces } from '../../support/workspaces.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let ws: BubblewrapWorkspaces;
let sandboxed: string;
let bare: string;
let scripter: string;

const sandbox: CompiledAgent['sandbox'] = { backend: 'bubblewrap', mode: 'call', timeoutSeconds: 60, workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none', allow: [] } };

/** The model writes or patches notes.txt as the user asks, then says what it did. */
function script(b: ChatRequestBody) {
  const user = lastUser(b);
  const turn = b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user'));
  const results = turn.filter((m) => m.role === 'tool');
  if (results.length) return { text: `done: ${results.at(-1)!.content.slice(0, 600)}` };
  const write = /^write (.*)$/.exec(user);
  if (write) return { toolCalls: [{ id: 'w', name: 'write_file', arguments: JSON.stringify({ path: 'notes.txt', content: `${write[1]}\n` }) }] };
  if (user === 'script') {
    const code = 'from hermes_tools import write_file, ToolError\nwrite_file("notes.txt", "from a script\\n")\ntry:\n    write_file("more.txt", "x")\nexcept ToolError as e:\n    print("second:", e)\nprint("wrote notes")';
    return { toolCalls: [{ id: 'x', name: 'execute_code', arguments: JSON.stringify({ code }) }] };
  }
  const change = /^change (\S+) to (\S+)$/.exec(user);
  if (change) return { toolCalls: [{ id: 'p', name: 'patch', arguments: JSON.stringify({ path: 'notes.txt', old_string: change[1], new_string: change[2] }) }] };
  return { text: 'ok' };
}

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url));
  ws = await bubblewrapWorkspaces('turn');
  sandboxed = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'coder' }, toolsets: ['file'], sandbox, approvals: { mode: 'manual', deny: [], allow: [], timeoutSeconds: 60 } });
  scripter = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'scripter' }, toolsets: ['file', 'code_execution'], sandbox, approvals: { mode: 'manual', deny: [], allow: [], timeoutSeconds: 60 }, codeExecution: { maxToolCalls: 1 } });
  bare = await createTestAgent(rt, model.baseURL, { agent: { namespace: 'default', name: 'talker' }, toolsets: ['file', 'clock'] });
  worker = await startTestWorker(rt, { loop: { sandboxes: ws.backends(rt) } });
});

afterAll(async () => {
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
  await ws?.remove();
});

const notes = (sessionId: string) => join(workspaceDir(ws.dir, { namespace: 'default', agent: 'coder', sessionId, admissionId: sessionId }), 'notes.txt');
const toolNames = (i: number) => (model.requests[i]?.body.tools ?? []).map((t) => t.function.name).sort();

describe('sandboxed turns', () => {
  it('offers the file tools only to an agent with a sandbox', async () => {
    const before = model.requests.length;
    await runTurn(rt, { agentId: bare, sessionKey: 'talker:s1', content: 'hello' });
    expect(toolNames(before)).toEqual(['get_time', 'read_tool_result']);
    await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s0', content: 'hello' });
    expect(toolNames(before + 1)).toEqual(['patch', 'read_file', 'read_tool_result', 'search_files', 'write_file']);
  });

  it('runs execute_code in the session\'s workspace with the Profile\'s limits, returning what the script printed', async () => {
    const before = model.requests.length;
    const r = await runTurn(rt, { agentId: scripter, sessionKey: 'scripter:s1', content: 'script' });
    expect(toolNames(before)).toContain('execute_code');
    const result = JSON.parse(r.reply.slice('done: '.length)) as { status: string; output: string; tool_calls_made: number };
    expect(result).toMatchObject({ status: 'success', tool_calls_made: 1 });
    expect(result.output).toBe('second: the limit of 1 tool calls per script was reached; the call was not run\nwrote notes\n');
    const dir = workspaceDir(ws.dir, { namespace: 'default', agent: 'scripter', sessionId: r.a.sessionId, admissionId: r.a.sessionId });
    expect(await readFile(join(dir, 'notes.txt'), 'utf8')).toBe('from a script\n');
    expect(existsSync(join(dir, 'more.txt'))).toBe(false);
  });

  it('writes in the session\'s own workspace, checkpoints before each change, and /rollback restores', async () => {
    const first = await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s1', content: 'write alpha' });
    expect(first.reply).toContain('"created":true');
    const file = notes(first.a.sessionId);
    expect(await readFile(file, 'utf8')).toBe('alpha\n');
    // Hermes' own state in the workspace (a session sandbox's working directory) is no checkpoint's business.
    const cwdFile = join(file, '..', SESSION_CWD_DIR, 'cwd');
    await mkdir(join(cwdFile, '..'), { recursive: true });
    await writeFile(cwdFile, '/workspace/before\n');
    const patched = await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s1', content: 'change alpha to beta' });
    expect(patched.reply).toContain('+beta');
    expect(await readFile(file, 'utf8')).toBe('beta\n');
    await writeFile(cwdFile, '/workspace/after\n');

    const other = await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s2', content: 'write gamma' });
    expect(other.a.sessionId).not.toBe(first.a.sessionId);
    expect(await readFile(notes(other.a.sessionId), 'utf8')).toBe('gamma\n');
    expect(await readFile(file, 'utf8')).toBe('beta\n');

    const calls = model.requests.length;
    const list = await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s1', content: '/rollback' });
    // Two checkpoints: before the write (no notes.txt yet) and before the patch (alpha).
    expect(list.reply).toMatch(/Checkpoints, newest first:\n1\. \w+ .*patch.*\n2\. \w+ .*write_file/);
    const restored = await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s1', content: '/rollback 1' });
    expect(restored.reply).toMatch(/^Restored checkpoint 1 .*Files: reverted notes\.txt\./);
    expect(await readFile(file, 'utf8')).toBe('alpha\n');
    expect(restored.reply).not.toContain('.hermes');
    expect(await readFile(cwdFile, 'utf8')).toBe('/workspace/after\n');
    const oldest = await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s1', content: '/rollback 3' });
    expect(oldest.reply).toContain('removed notes.txt');
    expect(existsSync(file)).toBe(false);
    const undo = await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s1', content: '/rollback 1' });
    expect(undo.reply).toContain('restored notes.txt');
    expect(await readFile(file, 'utf8')).toBe('alpha\n');
    expect(model.requests.length).toBe(calls); // no model call for /rollback
    expect((await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s1', content: '/rollback 99' })).reply).toMatch(/There is no checkpoint 99: the workspace has \d+/);
    // Read as the gateway reads commands: more words are a bad argument, never a message to the model.
    expect((await runTurn(rt, { agentId: sandboxed, sessionKey: 'coder:s1', content: '/rollback 1 2' })).reply).toBe('/rollback takes a checkpoint number (1 = the newest), got "1 2". Send /rollback to list them.');
    expect((await runTurn(rt, { agentId: bare, sessionKey: 'talker:s1', content: '/rollback' })).reply).toMatch(/no sandbox/);
  });
});
