// One pg Pool per process, shared by Prisma (through its driver adapter) and by the hot ledger
// statements that run as raw SQL (FOR UPDATE SKIP LOCKED, conditional lease updates, NOTIFY).
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client.js';

export type { PrismaClient };
export type Sql = Pick<pg.PoolClient, 'query'>;

// int8 (sequence numbers, epochs) as JS numbers on our pool only (our values stay far below
// 2^53); a global parser would also change what other pg users in the process (the schema
// engine's adapter) receive.
const parseInt8 = (v: string) => Number(v);
const poolTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? parseInt8 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export interface Db {
  pool: pg.Pool;
  prisma: PrismaClient;
  /** Runs `fn` in one transaction on a dedicated connection; rolls back on throw. */
  tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface DbOptions {
  /** @defaultValue 20 */
  max?: number;
  applicationName?: string;
  /**
   * Client-side bound on every query (HERMES_DB_QUERY_TIMEOUT_SECONDS): a connection that went
   * half-open answers nothing, and without it a query on it would wait for ever. @defaultValue 30000
   */
  queryTimeoutMs?: number;
}

/**
 * Waits for `closing` (a pool's or client's end()) at most `ms`: a half-open connection never
 * acknowledges the goodbye, and a process that is shutting down must not hang on it.
 */
export async function endWithin(closing: Promise<unknown>, ms = 2_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => { timer = setTimeout(resolve, ms); timer.unref(); });
  await Promise.race([closing.catch(() => undefined), late]);
  clearTimeout(timer);
}

/** Ends `pool` without hanging on a half-open connection. */
export const endPool = (pool: pg.Pool, ms?: number) => endWithin(pool.end(), ms);

export function openDb(databaseUrl: string, opts: DbOptions = {}): Db {
  const pool = new pg.Pool({
    connectionString: databaseUrl, max: opts.max ?? 20, application_name: opts.applicationName ?? 'hermes',
    connectionTimeoutMillis: 5_000, query_timeout: opts.queryTimeoutMs ?? 30_000, keepAlive: true, types: poolTypes,
  });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    pool,
    prisma,
    async tx(fn) {
      const client = await pool.connect();
      // A checked-out client has no error listener of the pool's: a connection that dies between
      // two statements (Postgres restarting) would throw its 'error' event at the process. Note
      // it instead; the statement in flight fails, and the broken client is destroyed, not reused.
      let broken: Error | undefined;
      const onError = (err: Error) => { broken = err; };
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        const out = await fn(client);
        await client.query('COMMIT');
        return out;
      } catch (err) {
        // A connection that cannot even roll back (reset, timed out, half-open) is dropped, not pooled.
        if (!broken && !(await client.query('ROLLBACK').then(() => true, () => false))) broken = new Error('ROLLBACK failed');
        throw err;
      } finally {
        client.off('error', onError);
        client.release(broken);
      }
    },
    async close() {
      await prisma.$disconnect();
      await endPool(pool);
    },
  };
}
