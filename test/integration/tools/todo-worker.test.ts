// The todo tool in the real worker: a turn writes the list, the next turn (on a restarted worker)
// reads it back from Postgres.
import { describe, expect, it } from 'vitest';
import { listTranscript } from '../../../services/core/index.js';
import { lastUser, type ChatRequestBody, type Script } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, startTestWorker, useAgentSystem } from '../../support/system.js';

function script(b: ChatRequestBody): Script {
  const last = b.messages.at(-1)!;
  if (last.role === 'user' && lastUser(b) === 'plan') return { toolCalls: [{ id: 'w', name: 'todo', arguments: JSON.stringify({ todos: [{ id: '1', content: 'write tests', status: 'in_progress' }] }) }] };
  if (last.role === 'user' && lastUser(b) === 'what is left') return { toolCalls: [{ id: 'r', name: 'todo', arguments: '{}' }] };
  return { text: 'ok' };
}

const sys = useAgentSystem(script);

describe('todo in the worker', () => {
  it('keeps the list in Postgres across turns and a worker restart', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { toolsets: ['todo'] });
    const key = 'agent:default/demo:api:dm:todo';
    const first = await runTurn(sys.rt, { agentId, sessionKey: key, content: 'plan' });
    expect(first.a.outcome).toBe('completed');
    await sys.worker.close();
    sys.worker = await startTestWorker(sys.rt);
    const second = await runTurn(sys.rt, { agentId, sessionKey: key, content: 'what is left' });
    const read = (await listTranscript(sys.rt.db.pool, second.a.sessionId)).filter((m) => m.role === 'tool').at(-1)!;
    expect(JSON.parse(read.content)).toMatchObject({ todos: [{ id: '1', content: 'write tests', status: 'in_progress' }], revision: 1 });
  });
});
