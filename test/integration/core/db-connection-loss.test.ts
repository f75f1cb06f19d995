// A transaction whose connection dies between two statements (Postgres restarting, a backend
// terminated) fails as "store unavailable" — it must not throw the connection's 'error' event at
// the process (a checked-out pg client has no listener of the pool's) — and the pool goes on.
import { afterAll, beforeAll, expect, it } from 'vitest';
import pg from 'pg';
import { isStoreUnavailable, openDb, type Db } from '../../../services/core/index.js';
import { createTestDatabase, eventually, type TestDatabase } from '../../support/services.js';

let database: TestDatabase;
let db: Db;
beforeAll(async () => {
  database = await createTestDatabase({ migrate: false });
  db = openDb(database.url);
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
});

it('fails the transaction, not the process, when its backend is terminated between statements', async () => {
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  let terminated!: () => void;
  const gone = new Promise<void>((r) => { terminated = r; });
  const outcome = db.tx(async (sql) => {
    const { rows } = await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    // Between statements: the server's FATAL arrives while no query is active.
    await eventually(async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [rows[0]!.pid])).rowCount === 0, 'the backend gone');
    await new Promise((r) => setImmediate(r));
    terminated();
    await sql.query('SELECT 1');
  }).then(() => undefined, (err: unknown) => err);
  await gone;
  const err = await outcome;
  await admin.end();
  expect(err).toBeInstanceOf(Error);
  expect(isStoreUnavailable(err)).toBe(true);
  expect((await db.pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1); // the broken client was not reused
});
