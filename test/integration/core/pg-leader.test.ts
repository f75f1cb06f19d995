// runAsLeader against real Postgres: one holder per name, a clean stop hands over at once, a
// killed holder's session releases the lock to the other candidate, and a stranded (half-open)
// holder stops its job on its own.
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createLogger, runAsLeader, type Leadership } from '../../../services/core/index.js';
import { createTestDatabase, eventually, type TestDatabase } from '../../support/services.js';
import { startTcpProxy } from '../../support/tcp-proxy.js';

const log = createLogger('test', 'silent');
const tuning = { pingMs: 100, pingTimeoutMs: 500, connectTimeoutMs: 1_000, initialBackoffMs: 50, maxBackoffMs: 200 };

let database: TestDatabase;
beforeAll(async () => { database = await createTestDatabase({ migrate: false }); });
afterAll(async () => { await database.drop(); });

const running: Leadership[] = [];
afterEach(async () => { for (const l of running.splice(0)) await l.stop(); });

/** A candidate whose job records when it runs and when its signal aborts. */
function candidate(name: string, url = database.url) {
  const events: string[] = [];
  const l = runAsLeader({
    databaseUrl: url, name, log, tuning,
    lead: (signal) => new Promise<void>((resolve) => {
      events.push('start');
      signal.addEventListener('abort', () => { events.push('abort'); resolve(); }, { once: true });
    }),
  });
  running.push(l);
  return { l, events };
}

describe('runAsLeader', () => {
  it('lets one candidate lead per name, and hands over at once on a clean stop', async () => {
    const a = candidate('job-1');
    await eventually(() => a.l.leading, 'a leads');
    const b = candidate('job-1');
    const other = candidate('job-2');
    await eventually(() => other.l.leading, 'a different name has its own leader');
    await new Promise((r) => setTimeout(r, 400));
    expect(b.l.leading).toBe(false);
    expect(b.events).toEqual([]);
    await a.l.stop();
    expect(a.events).toEqual(['start', 'abort']);
    await eventually(() => b.l.leading, 'b takes over');
    expect(b.events).toEqual(['start']);
  });

  it('fails over when the holder’s session is killed, and the old holder’s job is aborted', async () => {
    const a = candidate('job-kill');
    await eventually(() => a.l.leading, 'a leads');
    const b = candidate('job-kill');
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
    } finally {
      await admin.end();
    }
    await eventually(() => a.events.includes('abort'), 'a’s job is aborted');
    await eventually(() => a.l.leading !== b.l.leading && (a.l.leading || b.l.leading), 'exactly one leads again');
  });

  it('stops the job of a holder whose connection went half-open', async () => {
    const url = new URL(database.url);
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
    try {
      const a = candidate('job-stall', proxy.via(database.url));
      await eventually(() => a.l.leading, 'a leads through the proxy');
      proxy.strand();
      proxy.mode = 'stall';
      await eventually(() => a.events.includes('abort'), 'a notices its ping went unanswered and stops');
      expect(a.l.leading).toBe(false);
    } finally {
      await proxy.close();
    }
  });
});
