// The terminal tool end to end through the message API, on the real bubblewrap backend with the
// real approval guard: a safe command runs at once; a dangerous one is parked, shows on the event
// stream, runs only after `/approve`, and never after `/deny`; a hardline one never runs; output,
// exit codes and the workspace are the sandbox's.
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishRevision, type CompiledAgent } from '../../services/core/index.js';
import { workspaceDir } from '../../services/sandbox/index.js';
import { startGatewayOn } from '../../services/cli/gateway.js';
import type { RunningGateway } from '../../services/gateway/index.js';
import type { RunningWorker } from '../../services/worker/index.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/services.js';
import { lastUser, startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../support/fake-openai.js';
import { openTestRuntime, startTestWorker, testAgent, testApiKey, type TestRuntime } from '../support/system.js';
import { messageApi } from '../support/message-api.js';
import { bubblewrapWorkspaces, type BubblewrapWorkspaces } from '../support/workspaces.js';

/** The model runs what the user writes after "run: ", then repeats the tool's result. */
function script(b: ChatRequestBody) {
  const turn = b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user'));
  const result = turn.find((m) => m.role === 'tool')?.content;
  if (result !== undefined) return { text: `tool said: ${result}` };
  const text = lastUser(b);
  if (text.startsWith('run: ')) return { toolCalls: [{ id: 't', name: 'terminal', arguments: JSON.stringify({ command: text.slice(5) }) }] };
  return { text: 'ok' };
}

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let worker: RunningWorker;
let gateway: RunningGateway;
let ws: BubblewrapWorkspaces;
const auth = { authorization: `Bearer ${testApiKey}`, 'content-type': 'application/json' };
const { post, follow, replyOf } = messageApi(() => gateway.url, auth);
const sandbox: CompiledAgent['sandbox'] = { backend: 'bubblewrap', mode: 'call', timeoutSeconds: 30, workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none', allow: [] } };

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url, { HERMES_PORT: 0, HERMES_HOST: '127.0.0.1', HERMES_APPROVAL_POLL_MS: 50 }));
  ws = await bubblewrapWorkspaces('e2e');
  await publishRevision(rt.db, testAgent(model.baseURL, { agent: { namespace: 'default', name: 'coder' }, toolsets: ['terminal'], sandbox, approvals: { mode: 'manual', deny: ['curl *'], allow: [], timeoutSeconds: 30 } }));
  worker = await startTestWorker(rt, { loop: { sandboxes: ws.backends(rt) } });
  gateway = await startGatewayOn(rt);
});

afterAll(async () => {
  await gateway?.close();
  await worker?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
  await ws?.remove();
});

const hostPath = (sessionId: string, rel: string) => join(workspaceDir(ws.dir, { namespace: 'default', agent: 'coder', sessionId, admissionId: sessionId }), rel);
const toolOutput = (reply: string) => JSON.parse(reply.replace(/^tool said: /, '')) as { output: string; exit_code: number; error: string | null; status?: string };

describe('terminal through the message API', () => {
  it('runs a safe command in the session\'s sandbox at once, with its output and exit code', async () => {
    const turn = await post('coder', 'run: mkdir -p out && echo hi > out/a.txt && id -u && ls /workspace && exit 3');
    const r = toolOutput(await replyOf(turn));
    expect(r.exit_code).toBe(3);
    expect(r.output).toMatch(/^1000\nout\n$/); // the sandbox's unprivileged uid, the workspace's own files
    expect(await readFile(hostPath(turn.sessionId, 'out/a.txt'), 'utf8')).toBe('hi\n');
  });

  it('parks a dangerous command until /approve, then runs it in the sandbox', async () => {
    const turn = await post('coder', 'run: rm -r out && echo removed');
    const stream = follow(turn);
    await stream.until('approval.pending');
    expect(stream.events.find((e) => e.event === 'approval.pending')?.data).toMatchObject({ command: 'rm -r out && echo removed', reason: 'recursive delete' });
    expect(existsSync(hostPath(turn.sessionId, 'out/a.txt'))).toBe(true); // nothing ran while it waits
    await post('coder', '/approve');
    const reply = (await stream.done).find((e) => e.event === 'reply')?.data.content as string;
    expect(toolOutput(reply)).toMatchObject({ output: 'removed\n', exit_code: 0 });
    expect(existsSync(hostPath(turn.sessionId, 'out'))).toBe(false);
  });

  it('runs nothing after /deny, for a deny glob, or for a hardline command', async () => {
    const turn = await post('coder', 'run: mkdir keep && chmod -R 777 keep && touch keep/ran');
    const stream = follow(turn);
    await stream.until('approval.pending');
    await post('coder', '/deny');
    const denied = toolOutput((await stream.done).find((e) => e.event === 'reply')?.data.content as string);
    expect(denied).toMatchObject({ status: 'blocked', exit_code: -1, error: expect.stringMatching(/^BLOCKED: the user denied/) });
    expect(existsSync(hostPath(turn.sessionId, 'keep'))).toBe(false);

    const glob = toolOutput(await replyOf(await post('coder', 'run: curl http://example.com > x')));
    expect(glob).toMatchObject({ status: 'blocked', error: expect.stringMatching(/^BLOCKED/) });
    const hardline = toolOutput(await replyOf(await post('coder', 'run: rm -rf / --no-preserve-root')));
    expect(hardline).toMatchObject({ status: 'blocked', error: expect.stringMatching(/^BLOCKED/) });
  });
});
