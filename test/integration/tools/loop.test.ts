// The sandbox tools inside the agent loop (a fake model, a real sandbox): LoopInput.toolContext
// reaches every call, a write then a command run in order, and the results the model is sent are
// the tools' own.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialPool, OpenAIChatProvider, ProcessRegistry, runAgentLoop, sandboxTools, type ChatMessage } from '../../../services/agent/index.js';
import { startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';
import { recordingClock } from '../agent/helpers.js';
import { recordingGuard } from './helpers.js';

let server: FakeOpenAI;
let box: TestSessionSandbox;
const processes = new ProcessRegistry();

const script = (b: ChatRequestBody) => {
  const results = b.messages.filter((m) => m.role === 'tool').length;
  if (results === 0) {
    return { toolCalls: [
      { id: 'w', name: 'write_file', arguments: JSON.stringify({ path: 'notes/todo.md', content: 'ship it\n' }) },
      { id: 't', name: 'terminal', arguments: JSON.stringify({ command: 'cat notes/todo.md; exit 2' }) },
    ] };
  }
  if (results === 2) return { toolCalls: [{ id: 'r', name: 'read_file', arguments: JSON.stringify({ path: '~/notes/todo.md' }) }] };
  return { text: 'done' };
};

beforeAll(async () => {
  server = await startFakeOpenAI(script);
  box = await testSessionSandbox();
});
afterAll(async () => {
  processes.close();
  await server?.close();
  await box?.cleanup();
});

describe('sandbox tools in the loop', () => {
  it('run in order through the sandbox and the guard the loop was given', async () => {
    const stored: ChatMessage[] = [];
    const guard = recordingGuard();
    const pool = new CredentialPool('fake', [new OpenAIChatProvider({ apiKey: 'sk-a', baseURL: server.baseURL, timeoutMs: 10_000 })]);
    const out = await runAgentLoop({
      sessionId: 's', routes: [{ key: 'fake', model: 'gpt-test', pool }], system: [], history: [{ role: 'user', content: 'go' }],
      tools: sandboxTools(processes), toolContext: { sandbox: box, guard }, signal: new AbortController().signal, clock: recordingClock(),
      persist: { assistant: async () => undefined, toolResult: async (m) => { stored.push(m); } },
    });
    expect(out.outcome).toBe('completed');
    expect(await readFile(join(box.root, 'notes/todo.md'), 'utf8')).toBe('ship it\n');
    const byId = Object.fromEntries(stored.map((m) => [m.toolCallId, JSON.parse(m.content) as Record<string, unknown>]));
    expect(byId.w).toMatchObject({ path: '/workspace/notes/todo.md', created: true });
    expect(byId.t).toMatchObject({ output: 'ship it\n', exit_code: 2 });
    expect(byId.r).toMatchObject({ content: '     1|ship it' });
    expect(guard.asked).toEqual(['cat notes/todo.md; exit 2']);
    expect(server.requests[0]!.body.tools!.map((t) => t.function.name).sort()).toEqual(['execute_code', 'patch', 'process', 'read_file', 'search_files', 'terminal', 'write_file']);
  });
});
