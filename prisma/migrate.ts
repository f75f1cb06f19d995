// The migration runner: applies `prisma/migrations` (Prisma's folder format, so a cluster with
// the real CLI can still run `prisma migrate deploy` on the same folder) through the WASM
// schema engine, and answers "does the database match schema.prisma?" with Prisma's own diff.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { MigrationList, SchemaFilter } from '@prisma/schema-engine-wasm';
import { openSchemaEngine, type EngineHandle } from './engine.js';

export const prismaDir = fileURLToPath(new URL('.', import.meta.url));
export const schemaPath = join(prismaDir, 'schema.prisma');
export const migrationsDir = join(prismaDir, 'migrations');

const noFilter: SchemaFilter = { externalTables: [], externalEnums: [] };

async function loadMigrations(dir = migrationsDir): Promise<MigrationList> {
  const names = existsSync(dir) ? (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name).sort() : [];
  const lockPath = join(dir, 'migration_lock.toml');
  return {
    baseDir: dir,
    lockfile: { path: 'migration_lock.toml', content: existsSync(lockPath) ? await readFile(lockPath, 'utf8') : null },
    shadowDbInitScript: '',
    migrationDirectories: await Promise.all(names.map(async (name) => ({
      path: name,
      migrationFile: { path: 'migration.sql', content: { tag: 'ok' as const, value: await readFile(join(dir, name, 'migration.sql'), 'utf8') } },
    }))),
  };
}

async function withEngine<T>(databaseUrl: string, fn: (h: EngineHandle, schemaText: string) => Promise<T>): Promise<T> {
  const schemaText = await readFile(schemaPath, 'utf8');
  const handle = await openSchemaEngine(databaseUrl, schemaPath, schemaText);
  try {
    return await fn(handle, schemaText);
  } finally {
    await handle.close();
  }
}

/** Applies every migration not yet recorded in `_prisma_migrations`; returns their names. */
export async function applyMigrations(databaseUrl: string): Promise<string[]> {
  return withEngine(databaseUrl, async ({ engine }) => {
    const out = await engine.applyMigrations({ migrationsList: await loadMigrations(), filters: noFilter });
    return out.appliedMigrationNames;
  });
}

/** SQL that would turn the live database into `schema.prisma`; empty when they match. */
export async function diffDatabaseToSchema(databaseUrl: string): Promise<string> {
  return withEngine(databaseUrl, async ({ engine }, content) => {
    const files = [{ path: schemaPath, content }];
    const out = await engine.diff({
      from: { tag: 'schemaDatasource', files, configDir: prismaDir },
      to: { tag: 'schemaDatamodel', files },
      script: true, exitCode: null, filters: noFilter,
    });
    return normaliseScript(out.stdout ?? '');
  });
}

/**
 * Writes a new migration folder for the difference between the migrated database and
 * `schema.prisma` (what `prisma migrate dev --create-only` does). The WASM engine has no shadow
 * database of its own, so instead of replaying history into one we apply every migration to
 * `databaseUrl` (a development database) and diff it against the schema.
 * Returns the folder name, or undefined when nothing changed.
 */
export async function createMigration(databaseUrl: string, name: string, now = new Date()): Promise<string | undefined> {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`migration name "${name}" must be snake_case (a-z, 0-9, _)`);
  await applyMigrations(databaseUrl);
  const first = !existsSync(migrationsDir) || (await readdir(migrationsDir)).every((f) => !/^\d/.test(f));
  const sql = first ? await diffEmptyToSchema(databaseUrl) : await diffDatabaseToSchema(databaseUrl);
  if (!sql) return undefined;
  const stamp = now.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const folderName = `${stamp}_${name}`;
  await mkdir(join(migrationsDir, folderName), { recursive: true });
  await writeFile(join(migrationsDir, folderName, 'migration.sql'), `${sql}\n`);
  const lock = join(migrationsDir, 'migration_lock.toml');
  if (!existsSync(lock)) await writeFile(lock, '# Written by hermes migrate; Prisma reads it too.\nprovider = "postgresql"\n');
  return folderName;
}

async function diffEmptyToSchema(databaseUrl: string): Promise<string> {
  return withEngine(databaseUrl, async ({ engine }, content) => {
    const out = await engine.diff({
      from: { tag: 'empty' }, to: { tag: 'schemaDatamodel', files: [{ path: schemaPath, content }] },
      script: true, exitCode: null, filters: noFilter,
    });
    return (out.stdout ?? '').trim();
  });
}

/** The engine prints "-- This is an empty migration." for no change. */
function normaliseScript(sql: string): string {
  const body = sql.split('\n').filter((l) => l.trim() && !l.startsWith('--')).join('\n');
  return body.trim();
}
