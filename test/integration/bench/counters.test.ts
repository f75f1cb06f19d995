// bench/counters.ts: the turn benchmark's Postgres commit count. Postgres publishes a backend's
// transactions at most once a second and keeps the rest pending while the backend stays idle, so
// a reading taken soon after a load missed the load's last commits (the c=1 row read 2.6 commits
// per turn where a turn makes 4).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DbCounters } from '../../../bench/counters.js';
import { createTestDatabase, serverUrls, type TestDatabase } from '../../support/services.js';

describe('bench commit counter', () => {
  let db: TestDatabase;
  let counters: DbCounters;

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    counters = await DbCounters.open(db.url, serverUrls().redisUrl);
  });

  afterAll(async () => {
    await counters?.close();
    await db?.drop();
  });

  it('counts the commits a pooled connection made just before it went idle', async () => {
    const before = await counters.commits();
    // A pool as the system's own (pg-pool defaults): one connection, 100 transactions in well under
    // a second, then idle — its first transaction publishes, the other 99 stay pending.
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        for (let i = 0; i < 100; i++) await client.query('SELECT 1');
      } finally {
        client.release();
      }
      const after = await counters.commits();
      // The 100 are all there. Besides them: this reader's own reading, the pool's connection
      // setup and whatever autovacuum did in this database meanwhile (8 seen under the full suite);
      // not another database's commits.
      expect(after.commits - before.commits).toBeGreaterThanOrEqual(100);
      expect(after.commits - before.commits).toBeLessThan(150);
    } finally {
      await pool.end();
    }
  }, 60_000);
});
