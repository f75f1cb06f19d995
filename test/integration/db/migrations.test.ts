// `hermes migrate` on a fresh database and on an up-to-date one: both end exactly at
// schema.prisma (Prisma's own diff is empty), and a second run applies nothing.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { readdir } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMigrations, diffDatabaseToSchema, migrationsDir } from '../../../prisma/migrate.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';

const run = promisify(execFile);
const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));
const dbs: TestDatabase[] = [];
afterAll(async () => { for (const d of dbs) await d.drop(); });

describe('migrations', () => {
  it('bring a fresh database to schema.prisma through the CLI, and are idempotent', async () => {
    const fresh = await createTestDatabase({ migrate: false });
    dbs.push(fresh);
    const env = { PATH: process.env.PATH, DATABASE_URL: fresh.url };
    const first = await run(process.execPath, [bin, 'migrate', '--check'], { env });
    const folders = (await readdir(migrationsDir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(first.stdout).toContain(`Applied ${folders.length} migration(s)`);
    const second = await run(process.execPath, [bin, 'migrate', '--check'], { env });
    expect(second.stdout).toContain('Database is up to date.');
    expect(await diffDatabaseToSchema(fresh.url)).toBe('');
  });

  it('report drift when the database differs from schema.prisma', async () => {
    const db = await createTestDatabase();
    dbs.push(db);
    expect(await applyMigrations(db.url)).toEqual([]);
    expect(await diffDatabaseToSchema(db.url)).toBe('');
    const pg = (await import('pg')).default;
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    await c.query('ALTER TABLE sessions DROP COLUMN prompt_identity');
    await c.end();
    expect(await diffDatabaseToSchema(db.url)).toMatch(/prompt_identity/);
    await expect(run(process.execPath, [bin, 'migrate', '--check'], { env: { PATH: process.env.PATH, DATABASE_URL: db.url } })).rejects.toMatchObject({ code: 1 });
  });
});
