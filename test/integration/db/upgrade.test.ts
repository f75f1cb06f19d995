// Upgrade safety. The previous release's migrations (prisma/migrations as of PREVIOUS_RELEASE, read
// with git) are applied to a fresh database and data is written on that schema; then today's
// migrations; the data must survive, the schema must equal schema.prisma, and the ledger test
// suite (test/integration/db/ledger.test.ts) must pass on copies of the upgraded database. And
// released migrations are immutable: prisma/released-migrations.sha256 holds their checksums.
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMigrations, diffDatabaseToSchema, migrationsDir } from '../../../prisma/migrate.js';
import { admit, canonicalJson, openDb, sha256, type CompiledAgent, type Db } from '../../../services/core/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';
import { testAgent } from '../../support/system.js';

/** The last released state of the schema (the commit the 0.1.0 chart's predecessor ran). */
const PREVIOUS_RELEASE = 'c1f4758';
const repo = fileURLToPath(new URL('../../../', import.meta.url));
const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' });
const dbs: TestDatabase[] = [];
afterAll(async () => { for (const d of dbs) await d.drop(); });

function previousMigrations(): { dir: string; names: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'hermes-prev-migrations-'));
  const names = git('ls-tree', '--name-only', `${PREVIOUS_RELEASE}:prisma/migrations`).trim().split('\n');
  for (const name of names) {
    if (name.endsWith('.toml')) { writeFileSync(join(dir, name), git('show', `${PREVIOUS_RELEASE}:prisma/migrations/${name}`)); continue; }
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'migration.sql'), git('show', `${PREVIOUS_RELEASE}:prisma/migrations/${name}/migration.sql`));
  }
  return { dir, names: names.filter((n) => !n.endsWith('.toml')) };
}

/**
 * An admission as the previous release's code wrote it (its hermes_admit call, with the columns it
 * had then): today's `admit` reads columns that only today's migrations add.
 */
async function oldAdmit(db: Db, a: { agentId: string; platform: string; sessionKey: string; eventId?: string; user: string; content: string }): Promise<{ admissionId: string; sessionId: string }> {
  const { rows } = await db.pool.query<{ o_admission: string; o_session: string }>(
    `SELECT o_admission, o_session FROM hermes_admit($1, $2, $3, $4, $5, NULL, $6, 'queue', $7, NULL, NULL, NULL)`,
    [randomUUID(), a.agentId, a.platform, a.sessionKey, a.user, a.eventId ?? null, a.content]);
  return { admissionId: rows[0]!.o_admission, sessionId: rows[0]!.o_session };
}

/** An agent and its revision as the previous release's publishRevision wrote them (today's writes published_by). */
async function oldPublish(db: Db, compiled: CompiledAgent): Promise<string> {
  return db.tx(async (sql) => {
    const { rows: [agent] } = await sql.query<{ id: string }>(
      `INSERT INTO agents (id, namespace, name, updated_at) VALUES (gen_random_uuid(), $1, $2, now()) RETURNING id`, [compiled.agent.namespace, compiled.agent.name]);
    const { rows: [rev] } = await sql.query<{ id: string }>(
      `INSERT INTO config_revisions (id, agent_id, hash, compiled) VALUES (gen_random_uuid(), $1, $2, $3) RETURNING id`,
      [agent!.id, sha256(canonicalJson(compiled)), JSON.stringify(compiled)]);
    await sql.query(`UPDATE agents SET current_revision_id = $2 WHERE id = $1`, [agent!.id, rev!.id]);
    return agent!.id;
  });
}

describe('upgrading from the previous release', () => {
  it('keeps its data, ends at schema.prisma, and passes the ledger suite', async () => {
    const prev = previousMigrations();
    expect(prev.names.length).toBeGreaterThan(5);
    const database = await createTestDatabase({ migrate: false, prefix: 'hermes_upgrade' });
    dbs.push(database);
    expect(await applyMigrations(database.url, { dir: prev.dir })).toEqual(prev.names);

    // Data written on the old schema through the ledger's API.
    let db = openDb(database.url);
    const agentId = await oldPublish(db, testAgent('http://127.0.0.1:1/v1'));
    const first = await oldAdmit(db, { agentId, platform: 'slack', sessionKey: 'C1:T1', eventId: 'Ev-old-1', user: 'U1', content: 'hello from the old release' });
    await oldAdmit(db, { agentId, platform: 'api', sessionKey: 'k2', user: 'U2', content: 'second' });
    const before = (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM admissions')).rows[0]!.n;
    await db.close();

    const applied = await applyMigrations(database.url);
    expect(applied.length).toBeGreaterThan(0);
    expect(applied.every((n) => !prev.names.includes(n))).toBe(true);
    expect(await diffDatabaseToSchema(database.url)).toBe('');

    db = openDb(database.url);
    try {
      expect((await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM admissions')).rows[0]!.n).toBe(before);
      // The old event still dedupes: the same Slack event is the same admission.
      const again = await admit(db, { agentId, platform: 'slack', sessionKey: 'C1:T1', eventId: 'Ev-old-1', user: { platformUserId: 'U1' }, content: 'hello from the old release' });
      expect(again).toMatchObject({ admissionId: first.admissionId, duplicate: true });
      const fresh = await admit(db, { agentId, platform: 'slack', sessionKey: 'C1:T1', eventId: 'Ev-new-1', user: { platformUserId: 'U1' }, content: 'after the upgrade' });
      expect(fresh.sessionId).toBe(first.sessionId);
    } finally {
      await db.close();
    }

    // The ledger suite, each of its databases a copy of the upgraded one (a run of its own, with
    // its own run id so its teardown never touches this run's processes).
    const out = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(join(repo, 'node_modules/.bin/vitest'), ['run', 'test/integration/db/ledger.test.ts'], {
        cwd: repo, timeout: 240_000, maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', HERMES_TEST_DB_TEMPLATE: database.name, HERMES_TEST_RUN: `upgrade-${Date.now()}` },
      }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, output: `${stdout}${stderr}` }));
    });
    expect(out.code, out.output.slice(-3_000)).toBe(0);
    // Every test of the file ran and passed: "Tests  N passed (N)", nothing failed or skipped.
    expect(out.output).toMatch(/Tests\s+(\d+) passed \(\1\)/);
  }, 300_000);
});

describe('released migrations', () => {
  const manifest = readFileSync(join(repo, 'prisma/released-migrations.sha256'), 'utf8').split('\n')
    .filter((l) => l && !l.startsWith('#')).map((l) => { const [sum, file] = l.split(/\s+/); return { sum: sum!, file: file! }; });

  it('are unchanged (a released migration is never edited: write a new one)', () => {
    expect(manifest.length).toBeGreaterThan(10);
    for (const { sum, file } of manifest) {
      const path = join(migrationsDir, file);
      expect(existsSync(path), `released migration ${file} was removed`).toBe(true);
      expect(createHash('sha256').update(readFileSync(path)).digest('hex'), `released migration ${file} was changed`).toBe(sum);
    }
  });

  it('include every migration of the previous release', () => {
    const listed = new Set(manifest.map((m) => m.file.split('/')[0]));
    const prev = git('ls-tree', '--name-only', `${PREVIOUS_RELEASE}:prisma/migrations`).trim().split('\n').filter((n) => !n.endsWith('.toml'));
    expect(prev.filter((n) => !listed.has(n))).toEqual([]);
  });
});
