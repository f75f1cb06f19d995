import { Command } from 'commander';
import { applyMigrations, createMigration, diffDatabaseToSchema } from '../../prisma/migrate.js';
import { loadConfig } from '../core/index.js';

const databaseUrl = () => loadConfig(process.env, { REDIS_URL: process.env.REDIS_URL ?? 'redis://unused:6379' }).DATABASE_URL;

export const migrateCommand = new Command('migrate')
  .description('Apply pending database migrations (prisma/migrations) with the built-in WASM schema engine; no downloads needed.')
  .option('--check', 'exit 1 when the database schema differs from prisma/schema.prisma (after applying)')
  .option('--create <name>', 'development: write a new migration for the changes in schema.prisma')
  .action(async (opts: { check?: boolean; create?: string }) => {
    const url = databaseUrl();
    if (opts.create) {
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
