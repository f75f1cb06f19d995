// `/stop` answered by the gateway (out of band, at admission) stops the conversation's delegated
// children too: their rows become `stopped` and a running child's model call is cut.
import { beforeAll, describe, expect, it } from 'vitest';
import { listSubagents } from '../../../services/core/index.js';
import { eventually } from '../../support/services.js';
import { type ChatRequestBody, type Script } from '../../support/fake-openai.js';
import { messageApi } from '../../support/message-api.js';
import { createTestAgent, testApiKey, useGatewaySystem } from '../../support/system.js';

const never = new Promise<void>(() => undefined);
const firstUser = (b: ChatRequestBody) => b.messages.find((m) => m.role === 'user')?.content ?? '';
const isChild = (b: ChatRequestBody) => firstUser(b).startsWith('You are a subagent');
const toolResult = (b: ChatRequestBody) => b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user')).find((m) => m.role === 'tool')?.content;

function script(b: ChatRequestBody): Script {
  if (isChild(b)) return { hold: never };
  if (toolResult(b) !== undefined) return { text: 'spawned' };
  return { toolCalls: [{ id: 'd1', name: 'delegate_task', arguments: JSON.stringify({ tasks: [{ goal: 'one' }, { goal: 'two' }] }) }] };
}

const sys = useGatewaySystem(script);
const api = messageApi(() => sys.gateway.url, { authorization: `Bearer ${testApiKey}`, 'content-type': 'application/json' });

beforeAll(async () => {
  await createTestAgent(sys.rt, sys.model.baseURL, { toolsets: ['delegation', 'clock'] });
});

describe('/stop through the gateway', () => {
  it('stops the delegated children of the conversation', async () => {
    const posted = await api.post('demo', 'delegate please', 'stopper');
    expect(await api.replyOf(posted)).toBe('spawned');
    const calls = await eventually(() => {
      const c = sys.model.inFlight().filter((r) => isChild(r.body));
      return c.length === 2 ? c : undefined;
    }, 'both children calling the model');

    const stop = await api.post('demo', '/stop', 'stopper');
    expect(await api.replyOf(stop)).toBe('Stopping 2 delegated task(s).');
    const rows = await eventually(async () => {
      const r = await listSubagents(sys.rt.db.pool, posted.sessionId);
      return r.every((c) => c.status === 'stopped') ? r : undefined;
    }, 'both children stopped');
    expect(rows).toHaveLength(2);
    await eventually(() => calls.every((c) => c.aborted), 'the children\'s model calls cut');
  });
});
