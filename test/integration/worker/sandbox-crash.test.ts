// A worker SIGKILLed while a terminal command runs in its sandbox: the sandboxed process dies with
// it (nothing half-finished keeps running unsupervised), the turn ends `unknown` (the command's
// effect cannot be known), and it is never run again — not by recovery, not by the next message.
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission, listMessages, type CompiledAgent } from '../../../services/core/index.js';
import { workspaceDir } from '../../../services/sandbox/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { lastUser, startFakeOpenAI, type ChatRequestBody, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, spawnTestWorker, startTestWorker, type TestRuntime } from '../../support/system.js';
import { bubblewrapWorkspaces, type BubblewrapWorkspaces } from '../../support/workspaces.js';

const COMMAND = 'echo started >> runs.log; sleep 60; echo finished >> runs.log';
let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let child: ChildProcess | undefined;
let survivor: RunningWorker | undefined;
let ws: BubblewrapWorkspaces;
let agentId: string;

function script(b: ChatRequestBody) {
  const turn = b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user'));
  if (turn.some((m) => m.role === 'tool')) return { text: 'done' };
  return lastUser(b) === 'run the slow job' ? { toolCalls: [{ id: 'slow', name: 'terminal', arguments: JSON.stringify({ command: COMMAND }) }] } : { text: 'here' };
}

const sandbox: CompiledAgent['sandbox'] = { backend: 'bubblewrap', mode: 'call', timeoutSeconds: 120, workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none', allow: [] } };

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url));
  ws = await bubblewrapWorkspaces('crash');
  agentId = await createTestAgent(rt, model.baseURL, { toolsets: ['terminal'], sandbox, approvals: { mode: 'off', deny: [], allow: [], timeoutSeconds: 60 } });
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await survivor?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
  await ws?.remove();
});

/** The sandboxed `sleep 60` of this test, if it still runs anywhere on the machine. */
async function sleeperAlive(): Promise<boolean> {
  const { readdir } = await import('node:fs/promises');
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(COMMAND)) return true;
  }
  return false;
}

describe('worker killed while a sandboxed command runs', () => {
  it('takes the command down with it, ends the turn unknown, and never runs it again', async () => {
    const key = 'agent:default/demo:api:dm:sandbox-crash';
    const adm = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'crash' }, content: 'run the slow job' });
    child = spawnTestWorker(rt.config, { HERMES_SANDBOX_BACKEND: 'bubblewrap', HERMES_WORKSPACES_DIR: ws.dir });
    await enqueueTurn(rt.queues, { admissionId: adm.admissionId });
    const log = join(workspaceDir(ws.dir, { namespace: 'default', agent: 'demo', sessionId: adm.sessionId, admissionId: adm.admissionId }), 'runs.log');
    await eventually(async () => (await readFile(log, 'utf8').catch(() => '')) === 'started\n', 'the command to start in the sandbox', 60_000);
    expect(await sleeperAlive()).toBe(true);

    child.kill('SIGKILL');
    await eventually(async () => !(await sleeperAlive()), 'the sandboxed command to die with its worker');

    survivor = await startTestWorker(rt, { loop: { sandboxes: ws.backends(rt) } });
    const next = await admit(rt.db, { agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'crash' }, content: 'are you there?' });
    await enqueueTurn(rt.queues, { admissionId: next.admissionId });
    await eventually(async () => (await getAdmission(rt.db.pool, adm.admissionId))?.state === 'unknown', 'the cut turn unknown', 30_000, 250);
    await eventually(async () => (await getAdmission(rt.db.pool, next.admissionId))?.state === 'terminal', 'the next turn served', 30_000);

    // Started once, never finished, never started again.
    expect(await readFile(log, 'utf8')).toBe('started\n');
    expect(model.requests.filter((r) => lastUser(r.body) === 'run the slow job')).toHaveLength(1);
    const transcript = await listMessages(rt.db.pool, adm.sessionId);
    expect(transcript.filter((m) => m.role === 'tool' && m.content.includes('finished'))).toHaveLength(0);
  });
});
