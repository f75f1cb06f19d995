// The curator over learned skills, on an injected clock: unused for 14 days → stale, for 30 →
// archived (not offered; every version kept), pinned ones exempt, a load makes a skill used again,
// /curator status|run|pin|restore for admins only, restore brings an archived skill back.
import { beforeAll, describe, expect, it } from 'vitest';
import { markSkillUsed, pgLearnedSkills, readSkillCatalog, runCurator, type LearnedSkill } from '../../../services/agent/index.js';
import { toolsAsTold, toldResult } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';


const sys = useAgentSystem(toolsAsTold);
const DAY = 86_400_000;
let agentId: string;
const skill = (name: string): LearnedSkill => ({ name, description: `${name} does a thing.`, tags: [], relatedSkills: [], requiredEnvironmentVariables: [], body: `${name} body`, files: [] });
const say = (user: string, content: string) => runTurn(sys.rt, { agentId, sessionKey: `${agentId}:${user}`, content, userId: user });
const offeredNames = async () => (await readSkillCatalog(sys.rt.db, agentId, { agent: { namespace: 'default', name: 'curated' } })).map((s) => s.name);

beforeAll(async () => {
  agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'curated' }, toolsets: ['skills'], admins: ['api:admin'] });
  const store = pgLearnedSkills(sys.rt.db);
  for (const name of ['old-one', 'used-one', 'kept-one']) await store.change(agentId, name, null, () => skill(name));
  // Written 20 days ago, never loaded since.
  await sys.rt.db.pool.query(`UPDATE skills SET updated_at = now() - interval '20 days' WHERE namespace = $1`, [`hermes:agent:${agentId}`]);
});

describe('the curator', () => {
  it('marks unused learned skills stale, spares pinned and recently loaded ones', async () => {
    expect((await say('alice', '/curator pin kept-one')).reply).toBe('Only this agent\'s admins may run the curator.');
    expect((await say('admin', '/curator pin kept-one')).reply).toBe('Pinned kept-one: the curator and the agent leave it as it is.');
    await say('alice', `tool skill_view ${JSON.stringify({ name: 'used-one' })}`); // loading it counts as use
    expect((await say('admin', '/curator run')).reply).toBe('Curator run: stale now: old-one; nothing archived.');
    expect(await offeredNames()).toEqual(['kept-one', 'old-one', 'used-one']); // stale skills are still offered
    const status = (await say('admin', '/curator status')).reply;
    expect(status).toContain('- old-one: stale, last used never');
    expect(status).toMatch(/- used-one: active, last used \d{4}-\d\d-\d\d/);
    expect(status).toContain('- kept-one: active, pinned');
    await markSkillUsed(sys.rt.db, agentId, 'old-one');
    expect((await say('admin', '/curator status')).reply).toContain('- old-one: active');
  });

  it('archives after 30 days unused: not offered, versions kept; restore brings it back', async () => {
    const later = new Date(Date.now() + 31 * DAY);
    expect(await runCurator(sys.rt.db, later, agentId)).toEqual({ stale: [], archived: ['old-one', 'used-one'] });
    expect(await offeredNames()).toEqual(['kept-one']);
    expect(toldResult((await say('alice', `tool skill_view ${JSON.stringify({ name: 'old-one' })}`)).reply)).toMatchObject({ success: false });
    expect((await pgLearnedSkills(sys.rt.db).history(agentId, 'old-one')).length).toBe(1);
    expect((await say('admin', '/curator restore old-one')).reply).toBe('Restored old-one: it is offered again.');
    expect(await offeredNames()).toEqual(['kept-one', 'old-one']);
    expect((await say('admin', '/curator restore nothing-here')).reply).toBe('This agent has no learned skill named nothing-here.');
    // A deleted skill is no skill to pin (status does not list it; pinned, it refused the agent's next create of its name).
    await pgLearnedSkills(sys.rt.db).change(agentId, 'gone-one', null, () => skill('gone-one'));
    await pgLearnedSkills(sys.rt.db).change(agentId, 'gone-one', null, () => null);
    for (const verb of ['pin', 'unpin', 'restore']) expect((await say('admin', `/curator ${verb} gone-one`)).reply).toBe('This agent has no learned skill named gone-one.');
    expect(toldResult((await say('alice', `tool skill_manage ${JSON.stringify({ action: 'create', name: 'gone-one', content: '---\nname: gone-one\ndescription: Back.\n---\nbody\n' })}`)).reply)).toMatchObject({ success: true });
    // Restoring a skill that is not archived says so and changes nothing (it used to answer "Restored").
    expect((await say('admin', '/curator restore old-one')).reply).toBe('old-one is not archived (it is active): it is offered already.');
    expect((await say('admin', '/curator restore kept-one')).reply).toBe('kept-one is not archived (it is active): it is offered already.');
    // A /curator that does not parse is answered with how to write it, never handed to the model (nor read as /curator status).
    for (const typo of ['/curator pin ../../x', '/curator frobnicate', '/curator pin a b']) {
      expect((await say('admin', typo)).reply).toBe(`Not understood: ${typo}. Use /curator status, /curator run, or /curator pin|unpin|restore <skill> (a learned skill's name).`);
    }
    expect((await say('alice', '/curator frobnicate')).reply).toBe('Only this agent\'s admins may run the curator.');
  });

  it('counts a write as recent as a use: an edit after an old load keeps a skill active, and an edit brings an archived one back', async () => {
    const store = pgLearnedSkills(sys.rt.db);
    await store.change(agentId, 'edited-one', null, () => skill('edited-one'));
    // Loaded 20 days ago, then edited today: unused for 0 days, not 20.
    await sys.rt.db.pool.query(`UPDATE skills SET last_used_at = now() - interval '20 days', updated_at = now() - interval '20 days' WHERE namespace = $1 AND name = 'edited-one'`, [`hermes:agent:${agentId}`]);
    await store.change(agentId, 'edited-one', null, () => ({ ...skill('edited-one'), body: 'edited today' }));
    expect((await runCurator(sys.rt.db, new Date(), agentId)).stale).not.toContain('edited-one');
    // Archived, then written by the agent (its create answers "exists already: use edit or patch"): offered again, as the tool's answer says.
    expect((await runCurator(sys.rt.db, new Date(Date.now() + 31 * DAY), agentId)).archived).toContain('edited-one');
    expect(await offeredNames()).not.toContain('edited-one');
    await store.change(agentId, 'edited-one', null, () => ({ ...skill('edited-one'), body: 'rewritten' }));
    expect(await offeredNames()).toContain('edited-one');
  });
});
