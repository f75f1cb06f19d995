import { Command, InvalidArgumentError } from 'commander';
import { applyMigrations, createMigration, diffDatabaseToSchema } from '../../prisma/migrate.js';
import { loadConfig } from '../core/index.js';

/** A migration name as the folder takes it, checked when the flag is read (an empty one used to apply the migrations instead). */
function migrationName(v: string): string {
  if (!/^[a-z0-9_]+$/.test(v)) throw new InvalidArgumentError('expected a snake_case name (a-z, 0-9, _), e.g. add_session_tags.');
  return v;
}

const databaseUrl = () => loadConfig(process.env, { REDIS_URL: process.env.REDIS_URL ?? 'redis://unused:6379' }).DATABASE_URL;

export const migrateCommand = new Command('migrate')
  .description('Apply pending database migrations (prisma/migrations) with the built-in WASM schema engine; no downloads needed.')
  .option('--check', 'exit 1 when the database schema differs from prisma/schema.prisma (after applying)')
  .option('--create <name>', 'development: write a new migration for the changes in schema.prisma', migrationName)
  .action(async (opts: { check?: boolean; create?: string }) => {
    const url = databaseUrl();
    if (opts.create !== undefined) {
      const folder = await createMigration(url, opts.create);
      console.log(folder ? `Created prisma/migrations/${folder}` : 'No changes: schema.prisma matches the migrations.');
      return;
    }
    const applied = await applyMigrations(url, { onWait: (line) => console.error(line) });
    console.log(applied.length ? `Applied ${applied.length} migration(s): ${applied.join(', ')}` : 'Database is up to date.');
    if (opts.check) {
      const drift = await diffDatabaseToSchema(url);
      if (drift) {
        console.error(`Database schema differs from prisma/schema.prisma:\n${drift}`);
        process.exitCode = 1;
      }
    }
  });
