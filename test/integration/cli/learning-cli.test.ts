// The learning loop's CLI as an owner runs it (the real `hermes` binary against a real Postgres):
// memory history / restore / forget (and --purge: nothing left to restore), learned-skill
// history / restore / export (a manifest and a Hermes folder; applied as a Skill it supersedes the
// learned copy), and `hermes review` deciding a staged write.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, openDb, publishRevision, type Db } from '../../../services/core/index.js';
import { pgLearnedSkills, pgMemoryStore, pgStaging, readSkillCatalog, type LearnedSkill } from '../../../services/agent/index.js';
import { skillSchema } from '../../../operator/index.js';
import { publishSkill } from '../../../operator/skills/store.js';
import { runHermes } from '../../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';
import { testAgent } from '../../support/system.js';

let database: TestDatabase;
let db: Db;
let agentId: string;
let aliceId: string;
let out: string;

const hermes = (...args: string[]) => runHermes(args, { DATABASE_URL: database.url });

const skill = (body: string): LearnedSkill => ({ name: 'deploy-check', description: 'Check a deploy.', tags: [], relatedSkills: [], requiredEnvironmentVariables: [], body, files: [{ path: 'references/dash.md', content: 'Grafana' }] });

beforeAll(async () => {
  database = await createTestDatabase();
  db = openDb(database.url);
  agentId = (await publishRevision(db, testAgent('http://127.0.0.1:1/v1', { agent: { namespace: 'team', name: 'ops' } }))).agentId;
  const a = await admit(db, { agentId, platform: 'api', sessionKey: 'alice', user: { platformUserId: 'alice' }, content: 'hi' });
  aliceId = (await db.pool.query<{ user_id: string }>('SELECT user_id FROM admissions WHERE id = $1', [a.admissionId])).rows[0]!.user_id;
  out = mkdtempSync(join(tmpdir(), 'hermes-export-'));
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('hermes memory', () => {
  it('history, restore, forget; --purge leaves nothing to restore', async () => {
    const store = pgMemoryStore(db);
    const scope = { agentId, target: 'user' as const, userId: aliceId };
    await store.write(scope, [{ action: 'add', content: 'likes tea' }], 1_375, null);
    await store.write(scope, [{ action: 'replace', old_text: 'tea', content: 'likes coffee' }], 1_375, null);
    const history = await hermes('memory', 'history', 'team/ops', '--user', 'api:alice');
    expect(history.code).toBe(0);
    expect(history.stdout).toMatch(/revision 2 .*1 entry[\s\S]*§ likes coffee[\s\S]*revision 1 [\s\S]*§ likes tea/);
    expect((await hermes('memory', 'restore', 'team/ops', '1', '--user', 'api:alice')).stdout).toBe('Restored revision 1 as revision 3.\n');
    expect((await store.read(scope)).entries).toEqual(['likes tea']);
    expect((await hermes('memory', 'forget', 'team/ops', '--user', 'api:alice')).code).toBe(0);
    expect((await store.read(scope)).entries).toEqual([]);
    await pgStaging(db).stage({ agentId, kind: 'memory', target: 'user', userId: aliceId, payload: { ops: [] }, diff: '+ likes tea', sessionId: null });
    // Alice's running session froze her USER block into its stored prompt; another person's session did not.
    const bob = await admit(db, { agentId, platform: 'api', sessionKey: 'bob', user: { platformUserId: 'bob' }, content: 'hi' });
    await db.pool.query(`UPDATE sessions SET system_prompt = 'USER PROFILE: likes tea', prompt_identity = 'x' WHERE agent_id = $1`, [agentId]);
    const purged = await hermes('memory', 'forget', 'team/ops', '--user', 'api:alice', '--purge');
    expect(purged.stdout).toBe('Forgotten: 4 stored revision(s) deleted; nothing is left to restore.\n');
    expect((await hermes('memory', 'history', 'team/ops', '--user', 'api:alice')).stdout).toBe('No revisions.\n');
    const again = await hermes('memory', 'restore', 'team/ops', '1', '--user', 'api:alice');
    expect([again.code, again.stderr]).toEqual([2, 'cannot restore: revision 1 is not stored (it never existed, or it was purged)\n']);
    expect((await db.pool.query('SELECT 1 FROM learning_writes WHERE user_id = $1', [aliceId])).rows).toEqual([]);
    const prompt = async (userId: string) => (await db.pool.query<{ p: string | null }>('SELECT system_prompt AS p FROM sessions WHERE agent_id = $1 AND user_id = $2', [agentId, userId])).rows.map((r) => r.p);
    expect(await prompt(aliceId)).toEqual([null]);
    expect(await prompt(bob.userId)).toEqual(['USER PROFILE: likes tea']);
  });

  it('says what is wrong with the agent or the person', async () => {
    expect(await hermes('memory', 'history', 'team/nobody')).toMatchObject({ code: 2, stderr: 'no agent team/nobody in this database\n' });
    expect(await hermes('memory', 'history', 'ops')).toMatchObject({ code: 2, stderr: 'name the agent as NAMESPACE/NAME (got "ops")\n' });
    expect(await hermes('memory', 'history', 'team/ops', '--user', 'slack:U0NOBODY')).toMatchObject({ code: 2, stderr: 'slack:U0NOBODY has never talked to this agent\n' });
    // A revision past a Postgres integer reached the query: 'error: value "100000000000000000000" is out of range for type integer'.
    for (const revision of ['99999999999999999999', '2147483648', 'abc', '0']) {
      expect(await hermes('memory', 'restore', 'team/ops', revision), revision).toMatchObject({
        code: 1, stderr: `error: command-argument value '${revision}' is invalid for argument 'revision'. expected a whole number from 1 to 2147483647.\n`,
      });
    }
  });
});

describe('hermes skills (learned)', () => {
  it('history, restore and export; the exported Skill supersedes the learned copy', async () => {
    const store = pgLearnedSkills(db);
    await store.change(agentId, 'deploy-check', null, () => skill('1. kubectl rollout status'));
    await store.change(agentId, 'deploy-check', null, () => skill('1. kubectl rollout status --timeout=60s'));
    const history = await hermes('skills', 'history', 'team/ops', 'deploy-check');
    expect(history.stdout).toMatch(/^version 2 .*Check a deploy\. {2}by agent {2}sha256:[0-9a-f]{12}\nversion 1 /);
    expect((await hermes('skills', 'restore', 'team/ops', 'deploy-check', '1')).stdout).toBe('Restored deploy-check version 1 (now version 1).\n');
    expect((await store.read(agentId, 'deploy-check')).skill?.body).toBe('1. kubectl rollout status');

    const exported = await hermes('skills', 'export', 'team/ops', 'deploy-check', '--out', out);
    expect(exported.code).toBe(0);
    const manifest = parse(readFileSync(join(out, 'deploy-check.yaml'), 'utf8')) as unknown;
    const valid = skillSchema.safeParse(manifest);
    expect(valid.success).toBe(true);
    expect(valid.data?.metadata).toMatchObject({ name: 'deploy-check', namespace: 'team', annotations: { 'hermes.dev/learned-by': 'team/ops' } });
    expect(readFileSync(join(out, 'deploy-check', 'SKILL.md'), 'utf8')).toBe('---\nname: deploy-check\ndescription: Check a deploy.\n---\n1. kubectl rollout status');
    expect(existsSync(join(out, 'deploy-check', 'references', 'dash.md'))).toBe(true);
    // Applied in the namespace (the operator publishes it) and offered to the Agent: the GitOps copy wins.
    await publishSkill(db, { namespace: 'team', name: 'deploy-check' }, { ...valid.data!.spec, body: 'GitOps-reviewed body.' });
    const catalog = await readSkillCatalog(db, agentId, { agent: { namespace: 'team', name: 'ops' }, skills: [{ name: 'deploy-check', object: 'deploy-check' }] });
    expect(catalog.filter((s) => s.name === 'deploy-check')).toEqual([expect.objectContaining({ source: 'gitops', body: 'GitOps-reviewed body.' })]);
  });
});

describe('hermes review', () => {
  it('lists and decides staged writes, recorded as the CLI user', async () => {
    const result = await pgStaging(db).stage({ agentId, kind: 'memory', target: 'memory', userId: null, payload: { ops: [{ action: 'add', content: 'deploys on Fridays are frozen' }] }, diff: '+ deploys on Fridays are frozen', sessionId: null });
    if (!('staged' in result)) throw new Error('not staged');
    const { staged } = result;
    const id = staged.id.slice(0, 8);
    expect((await hermes('review', 'team/ops')).stdout).toContain(`${id} · MEMORY notes · + deploys on Fridays are frozen`);
    expect((await hermes('review', 'team/ops', 'approve', id)).stdout).toBe(`Approved ${id}: applied as revision 1; new conversations see it.\n`);
    expect((await pgMemoryStore(db).read({ agentId, target: 'memory' })).entries).toEqual(['deploys on Fridays are frozen']);
    const { rows } = await db.pool.query<{ decided_by: string }>('SELECT decided_by FROM learning_writes WHERE id = $1', [staged.id]);
    expect(rows[0]!.decided_by).toMatch(/^cli:/);
    // Nothing decided is a failure (exit 2): it exited 0 for an id that names no write, or one already decided.
    expect(await hermes('review', 'team/ops', 'approve', id)).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(new RegExp(`^${id} was already approved by cli:`)) as unknown });
    expect(await hermes('review', 'team/ops', 'reject', 'abcdef12')).toMatchObject({ code: 2, stderr: 'No memory write abcdef12 (see /memory pending).\n' });
  });

  it('refuses a request it cannot carry out, saying which part', async () => {
    // These answered in chat words with exit 0 ("Say which: /memory approve <id>"), called approve
    // with a mistyped id unknown, or took --kind bogus as memory.
    expect(await hermes('review', 'team/ops', 'approve')).toMatchObject({ code: 2, stderr: 'approve needs the write\'s id (`hermes review team/ops` lists them)\n' });
    expect(await hermes('review', 'team/ops', 'approve', 'zzz')).toMatchObject({ code: 1, stderr: expect.stringContaining('argument \'id\'. expected the hex id') as unknown });
    expect(await hermes('review', 'team/ops', '--kind', 'bogus')).toMatchObject({ code: 1, stderr: expect.stringContaining('expected memory or skills') as unknown });
    expect(await hermes('review', 'team/ops', 'bogus')).toMatchObject({ code: 1, stderr: expect.stringContaining('Allowed choices are pending, diff, approve, reject') as unknown });
    expect(await hermes('review', 'team/ops', 'diff', 'abcd')).toMatchObject({ code: 2, stderr: expect.stringContaining('diff is for skills writes') as unknown });
  });
});
