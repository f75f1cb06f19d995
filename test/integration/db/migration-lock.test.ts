// Migrators started at once (an init container or Job per replica) on one database: exactly one
// applies the migrations, every other one waits for it — however long a migration takes — and
// then finds the database up to date. Prisma's own engine lock gives up after 10 s ("Timed out
// trying to acquire a postgres advisory lock"), which failed every migrator queued behind a
// migration longer than that. Also: an engine run leaves no timer that keeps the process alive
// (`hermes migrate` lingered 10 s after its work was done).
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMigrations, migrationsDir } from '../../../prisma/migrate.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';

const dbs: TestDatabase[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dbs) await d.drop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** The project's migrations plus one that takes `seconds` (a long data migration). */
async function migrationsWithSlowOne(seconds: number): Promise<{ dir: string; names: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'hermes-migrations-'));
  dirs.push(dir);
  await cp(migrationsDir, dir, { recursive: true });
  await mkdir(join(dir, '29991231000000_slow'));
  await writeFile(join(dir, '29991231000000_slow', 'migration.sql'), `SELECT pg_sleep(${seconds});\n`);
  const names = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  return { dir, names };
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('concurrent migrators', () => {
  it('wait for the one applying, even behind a migration longer than Prisma\'s 10 s lock timeout; one applies, the others find it done', async () => {
    const db = await createTestDatabase({ migrate: false });
    dbs.push(db);
    const { dir, names } = await migrationsWithSlowOne(12);
    const results = await Promise.allSettled([0, 1, 2].map(() => applyMigrations(db.url, { dir })));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    const applied = results.map((r) => (r as PromiseFulfilledResult<string[]>).value).sort((a, b) => b.length - a.length);
    expect(applied).toEqual([names, [], []]);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    const { rows } = await c.query<{ name: string; done: boolean }>(`SELECT migration_name AS name, finished_at IS NOT NULL AND rolled_back_at IS NULL AS done FROM _prisma_migrations ORDER BY 1`);
    await c.end();
    expect(rows).toEqual(names.map((name) => ({ name, done: true })));
  }, 120_000);

  it('leave no timer behind that would keep a `hermes migrate` process alive', async () => {
    const db = await createTestDatabase({ migrate: false });
    dbs.push(db);
    const before = timers();
    await applyMigrations(db.url);
    expect(timers()).toBeLessThanOrEqual(before);
  });
});
