// Write approval through real turns: with it on, the memory tool and skill_manage stage their
// writes with a diff instead of writing; only an Agent admin reviews them in chat (/memory,
// /skills: pending, diff, approve, reject); an approved write is applied then and recorded with
// who decided; a rejected one writes nothing; a decision is final. Default: on for agents more
// than one person may use.
import { describe, expect, it } from 'vitest';
import { decideStagedWrite, hasManyUsers, learnedNamespace, pgMemoryStore, pgStaging } from '../../../services/agent/index.js';
import { MAX_PENDING_WRITES } from '../../../services/agent/learning/staging.js';
import { toolsAsTold, toldResult } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, testAgent, useAgentSystem } from '../../support/system.js';


const sys = useAgentSystem(toolsAsTold);
const toolResult = toldResult;

describe('write approval', () => {
  it('stages memory writes; only an admin approves; the approved write is applied and recorded', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'gated' }, toolsets: ['memory', 'skills'], admins: ['api:admin'], learning: { memoryWriteApproval: true, skillWriteApproval: true } });
    const say = (user: string, content: string) => runTurn(sys.rt, { agentId, sessionKey: `${agentId}:${user}`, content, userId: user });
    const staged = toolResult((await say('alice', `tool memory ${JSON.stringify({ action: 'add', target: 'user', content: 'Alice likes tea' })}`)).reply);
    expect(staged).toMatchObject({ success: true, staged: true, pending_id: expect.stringMatching(/^[0-9a-f]{8}$/) });
    const id = staged.pending_id as string;
    const alice = (await say('alice', 'hi')).a.userId!;
    expect((await pgMemoryStore(sys.rt.db).read({ agentId, target: 'user', userId: alice })).entries).toEqual([]);

    expect((await say('alice', `/memory approve ${id}`)).reply).toBe('Only this agent\'s admins may review memory writes.');
    const pending = (await say('admin', '/memory pending')).reply;
    // Whose profile the write is for: the reviewer cannot tell a person's own profile from another's without it.
    expect(pending).toContain(`${id} · USER profile of api:alice · + Alice likes tea`);
    expect((await say('admin', `/memory approve ${id}`)).reply).toBe(`Approved ${id}: applied as revision 1; new conversations see it.`);
    expect((await pgMemoryStore(sys.rt.db).read({ agentId, target: 'user', userId: alice })).entries).toEqual(['Alice likes tea']);
    const { rows } = await sys.rt.db.pool.query<{ state: string; decided_by: string; content_hash: string }>('SELECT state, decided_by, content_hash FROM learning_writes WHERE agent_id = $1', [agentId]);
    expect(rows).toEqual([{ state: 'approved', decided_by: 'api:admin', content_hash: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    expect((await say('admin', `/memory reject ${id}`)).reply).toBe(`${id} was already approved by api:admin.`);
    expect((await say('admin', '/memory pending')).reply).toBe('No memory writes are waiting for approval.');
    // Bare /memory lists the pending writes (Hermes); one that does not parse gets how to write it, never the model.
    expect((await say('admin', '/memory')).reply).toBe('No memory writes are waiting for approval.');
    expect((await say('admin', '/memory approve zz')).reply).toBe('Not understood: /memory approve zz. Use /memory pending, /memory approve <id> or /memory reject <id> (the ids /memory pending lists).');
    expect((await say('admin', '/skills aprove 1234abcd')).reply).toContain('Not understood: /skills aprove 1234abcd. Use /skills pending, /skills diff <id>');
    expect((await say('alice', '/memory frobnicate')).reply).toBe('Only this agent\'s admins may review memory writes.');
  });

  it('stages skill writes with a diff; a rejected one writes nothing', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'gated-skills' }, toolsets: ['skills'], admins: ['api:admin'], learning: { skillWriteApproval: true } });
    const say = (user: string, content: string) => runTurn(sys.rt, { agentId, sessionKey: `${agentId}:${user}`, content, userId: user });
    const content = '---\nname: tea-brewing\ndescription: Brew tea.\n---\n1. Boil water.\n';
    const staged = toolResult((await say('alice', `tool skill_manage ${JSON.stringify({ action: 'create', name: 'tea-brewing', content })}`)).reply);
    expect(staged).toMatchObject({ success: true, staged: true });
    const id = staged.pending_id as string;
    const diff = (await say('admin', `/skills diff ${id}`)).reply;
    expect(diff).toContain('+ name: tea-brewing');
    expect(diff).toContain('+ 1. Boil water.');
    expect((await say('admin', `/skills reject ${id}`)).reply).toBe(`Rejected ${id}: nothing was written.`);
    const { rows } = await sys.rt.db.pool.query('SELECT 1 FROM skills WHERE namespace = $1', [learnedNamespace(agentId)]);
    expect(rows).toEqual([]);
    // Invalid writes are refused at once, not staged.
    expect(toolResult((await say('alice', `tool skill_manage ${JSON.stringify({ action: 'patch', name: 'tea-brewing', old_string: 'x', new_string: 'y' })}`)).reply))
      .toMatchObject({ success: false, error: 'You have no learned skill named "tea-brewing" (create it first)' });
  });

  it('two admins approving one write at once apply it once: the second finds it decided', async () => {
    const agent = testAgent(sys.model.baseURL, { agent: { namespace: 'default', name: 'gated-race' }, toolsets: ['skills'], admins: ['api:admin'], learning: { skillWriteApproval: false } });
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, agent);
    const say = (content: string) => runTurn(sys.rt, { agentId, sessionKey: `${agentId}:alice`, content, userId: 'alice' });
    expect(toolResult((await say(`tool skill_manage ${JSON.stringify({ action: 'create', name: 'deploy', content: '---\nname: deploy\ndescription: Deploy.\n---\n1. run it\n' })}`)).reply)).toMatchObject({ success: true });
    // A patch whose new text still contains the old: applied twice, it would read "run it!!".
    await createTestAgent(sys.rt, sys.model.baseURL, { ...agent, learning: { skillWriteApproval: true } });
    expect(toolResult((await say(`tool skill_manage ${JSON.stringify({ action: 'patch', name: 'deploy', old_string: 'run it', new_string: 'run it!' })}`)).reply)).toMatchObject({ staged: true });
    const [w] = await pgStaging(sys.rt.db).pending(agentId, 'skill');
    const decisions = await Promise.all(['chat', 'admin-api'].map((by) => decideStagedWrite(sys.rt.db, agent, w!, 'approve', { by })));
    expect(decisions.filter((d) => d.done)).toHaveLength(1);
    expect(decisions.filter((d) => !d.done)).toEqual([{ done: false, reason: expect.stringMatching(/^already approved by (chat|admin-api)$/) }]);
    const { rows } = await sys.rt.db.pool.query<{ body: string }>(
      `SELECT v.content->>'body' AS body FROM skills s JOIN skill_versions v ON v.skill_id = s.id WHERE s.namespace = $1 AND s.name = 'deploy' ORDER BY v.version`, [learnedNamespace(agentId)]);
    expect(rows.map((r) => r.body)).toEqual(['1. run it\n', '1. run it!\n']);
  });

  it('holds a bounded number of writes for review: the same write once, none past MAX_PENDING_WRITES (parallel stagings too)', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'gated-bound' }, toolsets: ['memory'], admins: ['api:admin'], learning: { memoryWriteApproval: true } });
    const say = (content: string) => runTurn(sys.rt, { agentId, sessionKey: `${agentId}:mallory`, content, userId: 'mallory' });
    const add = (content: string) => `tool memory ${JSON.stringify({ action: 'add', target: 'memory', content })}`;
    const first = toolResult((await say(add('the build runs on Fridays'))).reply);
    // The same write again (a review repeating itself, a user insisting) is the waiting one, not a copy.
    expect(toolResult((await say(add('the build runs on Fridays'))).reply)).toMatchObject({ success: true, staged: true, pending_id: first.pending_id, message: expect.stringMatching(/^This write was staged already/) });
    const staging = pgStaging(sys.rt.db);
    const input = (n: number) => ({ agentId, kind: 'memory' as const, target: 'memory', userId: null, payload: { ops: [{ action: 'add', content: `fact ${n}` }] }, diff: `+ fact ${n}`, sessionId: null });
    for (let n = 2; n < MAX_PENDING_WRITES; n++) expect(await staging.stage(input(n))).toMatchObject({ again: false });
    // One place left, three at once: one is staged.
    const raced = await Promise.all([1000, 1001, 1002].map((n) => staging.stage(input(n))));
    expect(raced.filter((r) => 'staged' in r)).toHaveLength(1);
    expect(raced.filter((r) => 'full' in r)).toEqual([{ full: MAX_PENDING_WRITES }, { full: MAX_PENDING_WRITES }]);
    expect(toolResult((await say(add('one fact too many'))).reply)).toEqual({
      success: false, error: `${MAX_PENDING_WRITES} memory writes of this agent already wait for an admin's review (at most ${MAX_PENDING_WRITES}), so this one was not staged. Do not retry it: tell the user an admin needs to review the waiting ones first (/memory pending).`,
    });
    expect(await staging.pending(agentId, 'memory')).toHaveLength(MAX_PENDING_WRITES);
    // A decision frees a place.
    expect((await say(`/memory reject ${first.pending_id as string}`)).reply).toBe('Only this agent\'s admins may review memory writes.');
    await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:admin`, content: `/memory reject ${first.pending_id as string}`, userId: 'admin' });
    expect(toolResult((await say(add('one fact too many'))).reply)).toMatchObject({ success: true, staged: true });
  });

  it('is on by default for agents more than one person may use', () => {
    const one = testAgent('http://x/v1', { api: { enabled: true, keySha256: ['a'.repeat(64)], keys: [{ sha256: 'a'.repeat(64), user: 'alice' }] } });
    expect(hasManyUsers(one)).toBe(false);
    expect(hasManyUsers({ ...one, api: { enabled: true, keySha256: ['a'.repeat(64), 'b'.repeat(64)] } })).toBe(true);
    // One key, but a trusted backend (the test system's own key): it speaks for every user it names.
    expect(hasManyUsers(testAgent('http://x/v1'))).toBe(true);
    expect(hasManyUsers({ ...one, api: { enabled: true, keySha256: ['a'.repeat(64)], keys: [{ sha256: 'a'.repeat(64), trustedBackend: true }] } })).toBe(true);
    expect(hasManyUsers({ ...one, api: { enabled: false, keySha256: [] }, platforms: [{ type: 'slack', credentials: { secretName: 's', keys: [] }, allowlist: ['U1'], allowAll: false, dmPairing: false, groupPolicy: 'mention' }] } as never)).toBe(false);
    expect(hasManyUsers({ ...one, platforms: [{ type: 'slack', credentials: { secretName: 's', keys: [] }, allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention' }] } as never)).toBe(true);
  });
});
