// A delegated child whose worker process is SIGKILLed mid-turn: recovery settles the child's turn
// (unattended: interrupted, never /retry), the sweeper fails the child with that error, and the
// parent gets the batch's results as a new turn, served by a surviving worker.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission, getObligationForAdmission, listSubagents } from '../../../services/core/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type ChatRequestBody, type FakeOpenAI, type Script } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, spawnTestWorker, startTestWorker, type TestRuntime } from '../../support/system.js';
import type { RunningWorker } from '../../../services/worker/index.js';

let database: TestDatabase;
let model: FakeOpenAI;
let rt: TestRuntime;
let doomed: ChildProcess | undefined;
let survivor: RunningWorker | undefined;
let agentId: string;
const never = new Promise<void>(() => undefined);

const firstUser = (b: ChatRequestBody) => b.messages.find((m) => m.role === 'user')?.content ?? '';
const toolResult = (b: ChatRequestBody) => b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user')).find((m) => m.role === 'tool')?.content;

function script(b: ChatRequestBody): Script {
  if (firstUser(b).startsWith('You are a subagent')) return { hold: never };
  if (lastUser(b).startsWith('[Delegated task results')) return { text: 'saw the results' };
  if (toolResult(b) !== undefined) return { text: 'spawned' };
  return { toolCalls: [{ id: 'd1', name: 'delegate_task', arguments: JSON.stringify({ tasks: [{ goal: 'hang' }] }) }] };
}

beforeAll(async () => {
  database = await createTestDatabase();
  model = await startFakeOpenAI(script);
  rt = await openTestRuntime(testConfig(database.url));
  agentId = await createTestAgent(rt, model.baseURL, { toolsets: ['delegation', 'clock'] });
});

afterAll(async () => {
  doomed?.kill('SIGKILL');
  await survivor?.close();
  await rt?.close();
  await model?.close();
  await database?.drop();
});

describe('a delegated child whose worker dies', () => {
  it('ends failed with the error, and its parent hears of it in a new turn', async () => {
    doomed = spawnTestWorker(rt.config);
    const parent = await admit(rt.db, { agentId, platform: 'api', sessionKey: 'deleg:crash', user: { platformUserId: 'u1' }, content: 'delegate', replyTarget: { kind: 'api' } });
    await enqueueTurn(rt.queues, { admissionId: parent.admissionId });
    const call = await eventually(() => model.inFlight().find((r) => firstUser(r.body).startsWith('You are a subagent')), 'the child calling the model', 60_000);
    const [running] = await listSubagents(rt.db.pool, parent.sessionId);
    expect(running!.status).toBe('running');

    doomed.kill('SIGKILL');
    await eventually(() => call.aborted, 'the dead worker\'s connection to close');
    survivor = await startTestWorker(rt);

    const failed = await eventually(async () => {
      const [row] = await listSubagents(rt.db.pool, parent.sessionId);
      return row?.status === 'failed' ? row : undefined;
    }, 'the child failed', 30_000, 250);
    expect(failed.error).toBe('interrupted: owner stopped mid-turn');
    expect((await getAdmission(rt.db.pool, failed.childAdmissionId))?.outcome).toBe('interrupted');

    const results = await eventually(async () => {
      const { rows } = await rt.db.pool.query<{ id: string }>(`SELECT id FROM admissions WHERE session_id = $1 AND content LIKE '[Delegated task results%'`, [parent.sessionId]);
      const a = rows[0] && (await getAdmission(rt.db.pool, rows[0].id));
      return a?.state === 'terminal' ? a : undefined;
    }, 'the results turn', 30_000);
    expect(results.content).toContain(`## Subagent ${failed.id}: failed\nGoal: hang\nError: interrupted: owner stopped mid-turn`);
    expect((await getObligationForAdmission(rt.db.pool, results.id))?.content).toBe('saw the results');
    // Never re-run: the child's model call was made once.
    expect(model.requests.filter((r) => firstUser(r.body).startsWith('You are a subagent'))).toHaveLength(1);
  });
});
