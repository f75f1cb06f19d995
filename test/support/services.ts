// Real Postgres and Redis for tests, isolated per test file: a fresh database (migrated with the
// project's own runner) and a fresh BullMQ prefix. DATABASE_URL / REDIS_URL name the servers;
// `make test` starts project-local ones when unset.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { applyMigrations } from '../../prisma/migrate.js';
import { loadConfig, type Config } from '../../services/core/index.js';

export function serverUrls(): { databaseUrl: string; redisUrl: string } {
  const databaseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!databaseUrl || !redisUrl) {
    throw new Error('Tests need DATABASE_URL and REDIS_URL. Run them with `make test` (starts project-local Postgres and Redis), or `eval "$(hack/services.sh up)"` first.');
  }
  return { databaseUrl, redisUrl };
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** Apply the migrations. @defaultValue true */
  migrate?: boolean;
  /** Any database URL on the server to create it on. @defaultValue the test server's */
  serverUrl?: string;
  /** Name prefix. @defaultValue hermes_test */
  prefix?: string;
}

/** A new, migrated database on the test server (or the server of `serverUrl`). */
export async function createTestDatabase(opts: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const databaseUrl = opts.serverUrl ?? serverUrls().databaseUrl;
  const name = `${opts.prefix ?? 'hermes_test'}_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  // HERMES_TEST_DB_TEMPLATE: every test database starts as a copy of that one (the upgrade test runs
  // the ledger tests on a database migrated from the previous release, test/integration/db/upgrade.test.ts).
  const template = process.env.HERMES_TEST_DB_TEMPLATE;
  if (template !== undefined && !/^[a-z0-9_]+$/.test(template)) throw new Error(`HERMES_TEST_DB_TEMPLATE must be a plain database name, not ${JSON.stringify(template)}`);
  await admin.query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  if (opts.migrate !== false) await applyMigrations(url.toString());
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A Config for tests: the test database, a fresh queue prefix, fast timers; `overrides` win. */
export function testConfig(databaseUrl: string, overrides: Partial<Record<keyof Config, unknown>> = {}): Config {
  const { redisUrl } = serverUrls();
  return loadConfig({}, {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    HERMES_QUEUE_PREFIX: `test-${randomUUID()}`,
    // Never a fixed port: checkouts and test files run side by side.
    HERMES_PORT: 0,
    HERMES_WORKER_PORT: 0,
    HERMES_HOST: '127.0.0.1',
    HERMES_LOG_LEVEL: process.env.HERMES_TEST_LOG_LEVEL ?? 'silent',
    HERMES_SWEEP_SECONDS: 1,
    HERMES_SWEEP_GRACE_SECONDS: 1,
    HERMES_HEARTBEAT_SECONDS: 1,
    HERMES_INSTANCE_TTL_SECONDS: 3,
    HERMES_LEASE_TTL_SECONDS: 5,
    HERMES_LEASE_RENEW_SECONDS: 1,
    ...overrides,
  });
}

/** Polls `check` until it returns a truthy value or the deadline passes (no fixed sleeps). */
export async function eventually<T>(check: () => Promise<T | undefined | false | null> | T | undefined | false | null, what: string, timeoutMs = 30_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
