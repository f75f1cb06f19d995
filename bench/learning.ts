// `make bench-learning` (and `make bench`): the learning loop's costs next to raw baselines of the
// same run.
//   1. The session prompt with 200 offered skills: build time and size (the skills index is in
//      every session's prompt) next to the same prompt without skills, and the catalog read.
//   2. session_search over 100 000 stored messages (2 people, 500 sessions): latency of the
//      tool's query (fenced to one person, ranked, snippets) next to a raw
//      `SELECT … WHERE to_tsvector('simple', content) @@ websearch_to_tsquery(…)` on the same data,
//      and of a Chinese substring search (pg_trgm) next to a raw ILIKE.
// BENCH_SCALE scales the message count (default 1 = 100 000) and the repetitions.
import { randomUUID } from 'node:crypto';
import { openDb, publishRevision, type Db } from '../services/core/index.js';
import { buildPrompt, offeredSkills, readSkillCatalog, searchSessions, skillsIndexBlock, type RecallFence } from '../services/agent/index.js';
import { publishSkill } from '../operator/skills/store.js';
import type { SkillSpec } from '../operator/index.js';
import { createTestDatabase } from '../test/support/services.js';
import { testAgent } from '../test/support/system.js';
import { summarize, type Summary } from './percentiles.js';

const scale = Number(process.env.BENCH_SCALE ?? '1');
const progress = (s: string) => process.stderr.write(`[bench:learning] ${s}\n`);
const ms = (n: number) => n.toFixed(n < 10 ? 2 : 1);

async function timed(runs: number, fn: () => Promise<unknown> | unknown): Promise<Summary> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return summarize(out);
}

const line = (label: string, s: Summary) => `${label.padEnd(58)} p50 ${ms(s.p50).padStart(7)} ms   p95 ${ms(s.p95).padStart(7)} ms`;

async function promptBench(db: Db, agentId: string): Promise<void> {
  progress('publishing 200 skills…');
  const skills = [];
  for (let i = 0; i < 200; i++) {
    const name = `skill-${String(i).padStart(3, '0')}`;
    const spec = { name, description: `Does task number ${i} the tested way.`, tags: [], relatedSkills: [], requiredEnvironmentVariables: [], trust: 'community', body: `# ${name}\n\n1. Step one.\n2. Step two.\n`.repeat(20), files: [] } as SkillSpec;
    await publishSkill(db, { namespace: 'bench', name }, spec);
    skills.push({ name, object: name });
  }
  const agent = testAgent('http://127.0.0.1:1/v1', { agent: { namespace: 'bench', name: 'skilled' }, skills });
  const enabled = { toolsets: ['skills'], tools: ['skills_list', 'skill_view'] };
  const runs = Math.max(20, Math.round(200 * scale));
  const read = await timed(runs, () => readSkillCatalog(db, agentId, agent));
  const offered = offeredSkills(await readSkillCatalog(db, agentId, agent), enabled);
  const index = skillsIndexBlock(offered);
  const withSkills = await timed(runs * 10, () => buildPrompt({ agent, toolNames: ['skills_list', 'skill_view'], skillsIndex: skillsIndexBlock(offered) }));
  const without = await timed(runs * 10, () => buildPrompt({ agent, toolNames: [] }));
  const size = buildPrompt({ agent, toolNames: [], skillsIndex: index }).layers.join('').length;
  const bare = buildPrompt({ agent, toolNames: [] }).layers.join('').length;
  console.log('\n## Prompt with 200 offered skills');
  console.log(line('catalog read (200 skills, current versions, one query)', read));
  console.log(line('prompt build with the skills index', withSkills));
  console.log(line('prompt build without skills (baseline)', without));
  console.log(`${'prompt size'.padEnd(58)} ${size.toLocaleString('en-US')} chars (index ${index.length.toLocaleString('en-US')}; without skills ${bare.toLocaleString('en-US')}) ≈ ${Math.round(index.length / 4).toLocaleString('en-US')} tokens for the index`);
}

const WORDS = ['deploy', 'database', 'migration', 'timeout', 'grafana', 'pager', 'rollback', 'kubectl', 'latency', 'cache', 'release', 'incident', 'quota', 'ingress', 'certificate', 'backup'];
const CJK = ['数据库迁移', '发布回滚', '東京のサーバー', '再起動が必要', '证书过期'];

/** `total` messages in 500 sessions of two people, inserted with generate_series (fast, one statement per session batch). */
async function seedMessages(db: Db, agentId: string, total: number): Promise<{ alice: string; current: string }> {
  const users = [];
  for (const who of ['alice', 'bob']) {
    const { rows } = await db.pool.query<{ id: string }>(`INSERT INTO users (id, agent_id, platform, platform_user_id) VALUES (gen_random_uuid(), $1, 'api', $2) RETURNING id`, [agentId, who]);
    users.push(rows[0]!.id);
  }
  const sessions = 500;
  const perSession = Math.ceil(total / sessions);
  progress(`inserting ${total.toLocaleString('en-US')} messages in ${sessions} sessions…`);
  const ids: string[] = [];
  for (let s = 0; s < sessions; s++) {
    const id = randomUUID();
    ids.push(id);
    await db.pool.query(`INSERT INTO sessions (id, agent_id, user_id, session_key, updated_at) VALUES ($1, $2, $3, $4, now())`, [id, agentId, users[s % 2], `bench-${s}`]);
    await db.pool.query(`
      INSERT INTO messages (session_id, seq, role, content)
      SELECT $1, g, (CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END)::message_role,
        'We looked at the ' || ($2::text[])[1 + (g * 7 + $4) % 16] || ' and the ' || ($2::text[])[1 + (g * 13 + $4) % 16] || ' issue; '
        || CASE WHEN g % 50 = 0 THEN ($3::text[])[1 + (g + $4) % 5] ELSE 'nothing unusual' END || ' in step ' || g
      FROM generate_series(1, $5::int) g`, [id, WORDS, CJK, s, perSession]);
  }
  await db.pool.query('ANALYZE messages');
  return { alice: users[0]!, current: ids[0]! };
}

async function searchBench(db: Db): Promise<void> {
  const { agentId } = await publishRevision(db, testAgent('http://127.0.0.1:1/v1', { agent: { namespace: 'bench', name: 'recall' } }));
  const total = Math.round(100_000 * scale);
  const { alice, current } = await seedMessages(db, agentId, total);
  const fence: RecallFence = { agentId, userId: alice, allUsers: false, currentSessionId: current };
  const runs = Math.max(10, Math.round(50 * scale));
  progress('querying…');
  const tool = await timed(runs, () => searchSessions(db, fence, 'migration timeout', 5));
  const raw = await timed(runs, () => db.pool.query(`SELECT id FROM messages WHERE to_tsvector('simple', content) @@ websearch_to_tsquery('simple', $1) LIMIT 5`, ['migration timeout']));
  const rawAll = await timed(runs, () => db.pool.query(`SELECT count(*) FROM messages WHERE to_tsvector('simple', content) @@ websearch_to_tsquery('simple', $1)`, ['migration timeout']));
  const cjkTool = await timed(runs, () => searchSessions(db, fence, '数据库迁移', 5));
  const cjkRaw = await timed(runs, () => db.pool.query(`SELECT id FROM messages WHERE content ILIKE $1 LIMIT 5`, ['%数据库迁移%']));
  const admin = await timed(runs, () => searchSessions(db, { ...fence, allUsers: true }, 'migration timeout', 5));
  console.log(`\n## session_search over ${total.toLocaleString('en-US')} stored messages (500 sessions, 2 people)`);
  console.log(line('session_search "migration timeout" (one person, ranked, snippets)', tool));
  console.log(line('  admin all_users', admin));
  console.log(line('raw to_tsvector @@ websearch_to_tsquery, LIMIT 5', raw));
  console.log(line('raw to_tsvector @@ …, count of every match', rawAll));
  console.log(`${'  ratio to the raw LIMIT 5 / to the raw count (p50)'.padEnd(58)} ${(tool.p50 / raw.p50).toFixed(1)}× / ${(tool.p50 / rawAll.p50).toFixed(2)}×`);
  console.log(line('session_search "数据库迁移" (substring, pg_trgm)', cjkTool));
  console.log(line('raw ILIKE \'%数据库迁移%\', LIMIT 5', cjkRaw));
}

const database = await createTestDatabase();
const db = openDb(database.url, { max: 4 });
try {
  const { agentId } = await publishRevision(db, testAgent('http://127.0.0.1:1/v1', { agent: { namespace: 'bench', name: 'skilled' } }));
  await promptBench(db, agentId);
  await searchBench(db);
} finally {
  await db.close();
  await database.drop();
}
