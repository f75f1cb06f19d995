// The migration runner: applies `prisma/migrations` (Prisma's folder format, so a cluster with
// the real CLI can still run `prisma migrate deploy` on the same folder) through the WASM
// schema engine, and answers "does the database match schema.prisma?" with Prisma's own diff.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import pg from 'pg';
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

export interface ApplyOptions {
  /** The migrations folder. @defaultValue prisma/migrations */
  dir?: string;
  /** Told, every {@link lockWaitReportMs}, that another migrator holds the lock. */
  onWait?: (line: string) => void;
}

/** Our own advisory-lock key ("hermesmg"); Prisma's engine uses 72707369 for its own lock. */
const MIGRATE_LOCK_KEY = '7522544566771346791'; // 0x6865726d65736d67
const lockWaitReportMs = 10_000;

/**
 * Holds our migration lock (a session advisory lock on a connection of its own) while `fn` runs.
 * Prisma's engine takes a lock of its own too, but gives up after 10 s ("Timed out trying to
 * acquire a postgres advisory lock"): every migrator queued behind a migration longer than that
 * failed. Ours waits as long as the migration takes, saying so every 10 s; the engine's lock is
 * then never contended. The lock ends with the connection, so a migrator that dies frees it.
 */
async function underMigrationLock<T>(databaseUrl: string, onWait: ((line: string) => void) | undefined, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'hermes-migrate' });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(`SET lock_timeout = ${lockWaitReportMs}`);
    const started = Date.now();
    for (;;) {
      try {
        await client.query(`SELECT pg_advisory_lock(${MIGRATE_LOCK_KEY}::bigint)`);
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== '55P03') throw err; // lock_not_available: still waiting
        onWait?.(`waiting for another migrator to finish (${Math.round((Date.now() - started) / 1_000)} s)…`);
      }
    }
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * True when every migration of the folder is recorded as applied, with the same checksum (the
 * SHA-256 of its script, as Prisma records it): then the engine would do nothing, and is not
 * started at all — the replicas of a rollout, each with its own `hermes migrate`, pass in
 * milliseconds instead of each loading and running the engine in turn under the lock.
 */
async function allApplied(client: pg.Client, list: MigrationList): Promise<boolean> {
  let rows: { name: string; checksum: string }[];
  try {
    ({ rows } = await client.query<{ name: string; checksum: string }>(
      `SELECT migration_name AS name, checksum FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`));
  } catch (err) {
    if ((err as { code?: string }).code === '42P01') return false; // no _prisma_migrations yet
    throw err;
  }
  const applied = new Map(rows.map((r) => [r.name, r.checksum]));
  return list.migrationDirectories.every((m) => {
    const script = m.migrationFile.content;
    return script.tag === 'ok' && applied.get(m.path) === createHash('sha256').update(script.value).digest('hex');
  });
}

/**
 * Applies every migration not yet recorded in `_prisma_migrations`; returns their names. Any
 * number of migrators may run at once (an init container per replica): one applies, the others
 * wait for it and then find nothing to do.
 */
export async function applyMigrations(databaseUrl: string, opts: ApplyOptions = {}): Promise<string[]> {
  const migrationsList = await loadMigrations(opts.dir);
  return underMigrationLock(databaseUrl, opts.onWait, async (client) => {
    if (await allApplied(client, migrationsList)) return [];
    return withEngine(databaseUrl, async ({ engine }) => {
      const out = await engine.applyMigrations({ migrationsList, filters: noFilter });
      return out.appliedMigrationNames;
    });
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
