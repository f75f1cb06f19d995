// Write approval end to end through the message API (HTTP, the gateway, a worker, the fake model
// over the openai SDK): a person's memory write is staged; an admin sees and decides it in chat
// (/memory pending, /memory approve) and through the admin API (HERMES_ADMIN_TOKEN): 401 without
// the token, the list with its diff, approve, 409 once decided; the next conversation's prompt
// carries the approved memory.
import { beforeAll, describe, expect, it } from 'vitest';
import { publishRevision } from '../../services/core/index.js';
import { toldResult, toolsAsTold } from '../support/fake-openai.js';
import { testAgent, testApiKey, useGatewaySystem } from '../support/system.js';
import { messageApi } from '../support/message-api.js';

const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
/** A message-API person named by a trusted backend (the test key) is `api:<user id>`. */
const BOSS = 'api:boss';

const sys = useGatewaySystem(toolsAsTold, { HERMES_ADMIN_TOKEN: ADMIN_TOKEN });
const auth = { authorization: `Bearer ${testApiKey}`, 'content-type': 'application/json' };
const { post, replyOf } = messageApi(() => sys.gateway.url, auth);
const admin = (path: string, init: RequestInit = {}, token: string | null = ADMIN_TOKEN) =>
  fetch(`${sys.gateway.url}/v1/admin/agents/default/learner${path}`, { ...init, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } });

beforeAll(async () => {
  await publishRevision(sys.rt.db, testAgent(sys.model.baseURL, { agent: { namespace: 'default', name: 'learner' }, toolsets: ['memory'], admins: [BOSS], learning: { memoryWriteApproval: true } }));
});

describe('write approval through the message API and the admin API', () => {
  it('stages, lists, approves in chat and over HTTP; the next conversation sees the memory', async () => {
    const first = toldResult(await replyOf(await post('learner', `tool memory ${JSON.stringify({ action: 'add', content: 'Deploys are frozen on Fridays' })}`, 'alice'))) as { staged: boolean; pending_id: string };
    expect(first.staged).toBe(true);
    expect(await replyOf(await post('learner', '/memory pending', 'alice'))).toBe('Only this agent\'s admins may review memory writes.');
    expect(await replyOf(await post('learner', '/memory pending', 'boss'))).toContain(`${first.pending_id} · MEMORY notes · + Deploys are frozen on Fridays`);

    expect((await admin('/learning/memory', {}, null)).status).toBe(401);
    expect((await admin('/learning/memory', {}, 'wrong-token-0123456789abcdef')).status).toBe(401);
    const listed = await (await admin('/learning/memory')).json() as { writes: { id: string; diff: string; state: string }[] };
    expect(listed.writes).toEqual([expect.objectContaining({ diff: '+ Deploys are frozen on Fridays', state: 'pending' })]);
    const id = listed.writes[0]!.id;
    expect(id.startsWith(first.pending_id)).toBe(true);
    const approved = await admin(`/learning/memory/${id}/approve`, { method: 'POST', body: JSON.stringify({ by: 'oncall-lead' }) });
    expect([approved.status, await approved.json()]).toEqual([200, { id, state: 'approved', result: 'applied as revision 1' }]);
    const again = await admin(`/learning/memory/${id}/reject`, { method: 'POST', body: '{}' });
    expect(again.status).toBe(409);
    expect((await admin(`/learning/skills/${id}/approve`, { method: 'POST', body: '{}' })).status).toBe(404); // not a skill write
    const { rows } = await sys.rt.db.pool.query<{ decided_by: string }>('SELECT decided_by FROM learning_writes WHERE id = $1', [id]);
    expect(rows[0]!.decided_by).toBe('admin-api:oncall-lead');

    // A new conversation (another person's, even) starts with the approved MEMORY.
    await replyOf(await post('learner', 'hello from a new conversation', 'carol'));
    const req = sys.model.requests.findLast((r) => r.body.messages.some((m) => m.content === 'hello from a new conversation'))!;
    expect(req.body.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n')).toContain('Deploys are frozen on Fridays');
  });
});
