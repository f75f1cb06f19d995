// The agent cache's config listener (LISTEN hermes_config) against Postgres restarts and outages:
// one connection per process whatever pg emits, bounded reconnect attempts with backoff, and no
// stale config after a NOTIFY was missed while the listener was away.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { applyMigrations } from '../../../prisma/migrate.js';
import { AgentCache, backoffDelay, createMetrics, openDb, publishRevision, type Db } from '../../../services/core/index.js';
import { compiledAgent } from '../gateway/harness.js';
import { privatePostgres, type PrivatePostgres } from '../../support/postgres-server.js';
import { createTestDatabase, eventually, type TestDatabase } from '../../support/services.js';
import { manualTimers } from '../../support/manual-timers.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

const listenerConnections = async (url: string, database?: string): Promise<number> => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'hermes-config-listener' AND ($1::text IS NULL OR datname = $1)`,
      [database ?? null],
    );
    return rows[0]!.n;
  } finally {
    await c.end();
  }
};

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

describe('across real Postgres restarts', () => {
  let server: PrivatePostgres;
  let url: string;
  beforeAll(async () => {
    server = await privatePostgres();
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query('CREATE DATABASE hermes');
    await admin.end();
    url = server.urlFor('hermes');
    await applyMigrations(url);
  });
  afterAll(async () => { await server?.cleanup(); });

  it('keeps exactly one listener connection, and still hears NOTIFY, after clean and crash restarts', async () => {
    const db = openDb(url);
    open.push(db);
    const metrics = createMetrics('test');
    const cache = new AgentCache(db, url, { metrics, listener: { initialBackoffMs: 20, maxBackoffMs: 200 } });
    open.push(cache);
    await cache.start();
    await publishRevision(db, compiledAgent('restarts'));
    expect(await listenerConnections(url)).toBe(1);

    for (const [i, mode] of (['fast', 'immediate', 'fast'] as const).entries()) {
      await server.restart(mode);
      await eventually(async () => (await listenerConnections(url)) > 0, `a listener connection after restart ${i}`);
      // A NOTIFY round trip: the cached revision is replaced once the new one is published.
      const persona = `after restart ${i}`;
      await cache.get('default', 'restarts');
      await publishRevision(db, { ...compiledAgent('restarts'), persona });
      await eventually(async () => (await cache.get('default', 'restarts'))?.compiled.persona === persona, `the revision published after restart ${i}`);
      expect(await listenerConnections(url)).toBe(1);
      await eventually(() => cache.listening, 'the listener up');
    }
    expect((await metrics.configListenerReconnects.get()).values[0]?.value).toBe(3);
  });
});

describe('listener path cut (Postgres itself up)', () => {
  let database: TestDatabase;
  let db: Db;
  let proxy: TcpProxy;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = openDb(database.url);
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });
  const proxied = (p: TcpProxy) => {
    const u = new URL(database.url);
    u.hostname = '127.0.0.1';
    u.port = String(p.port);
    return u.toString();
  };

  it('serves a revision published while the listener was down, once it is back', async () => {
    const target = new URL(database.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    open.push(proxy);
    const cache = new AgentCache(db, proxied(proxy), { listener: { initialBackoffMs: 20, maxBackoffMs: 100, connectTimeoutMs: 60_000 } });
    open.push(cache);
    await cache.start();
    await publishRevision(db, { ...compiledAgent('missed'), persona: 'v1' });
    expect((await cache.get('default', 'missed'))?.compiled.persona).toBe('v1');

    // The listener's connection dies; its next attempt hangs on the way (Postgres and the pool are fine).
    proxy.mode = 'reset';
    await eventually(async () => (await listenerConnections(database.url, database.name)) === 0, 'the listener connection gone');
    proxy.mode = 'stall';
    await eventually(() => proxy.open > 0, 'a reconnect attempt held by the proxy');
    expect((await cache.get('default', 'missed'))?.compiled.persona).toBe('v1'); // read (and cached) while the listener is away
    await publishRevision(db, { ...compiledAgent('missed'), persona: 'v2' }); // its NOTIFY reaches no listener

    proxy.mode = 'forward'; // the held attempt goes through: LISTEN is back
    await eventually(async () => (await listenerConnections(database.url, database.name)) >= 1, 'the listener back');
    await eventually(async () => (await cache.get('default', 'missed'))?.compiled.persona === 'v2', 'v2 served after the listener reconnected');
    await eventually(() => cache.listening, 'the cache listening again');
    expect(await listenerConnections(database.url, database.name)).toBe(1);
  });

  it('makes one attempt per backoff step while Postgres stays unreachable, with growing, capped, jittered delays', async () => {
    proxy = await startTcpProxy({ port: 1 }, 'reset'); // accepts and drops every connection, counting them
    open.push(proxy);
    const timers = manualTimers();
    // Distinct delays so the test tells the connect deadline and ping timers from reconnect timers.
    const tuning = { timers, initialBackoffMs: 100, maxBackoffMs: 1_600, connectTimeoutMs: 777_777, pingMs: 888_888, random: () => 0.5 };
    const cache = new AgentCache(db, proxied(proxy), { listener: tuning });
    open.push(cache);
    const isRetry = (t: { ms: number }) => t.ms !== tuning.connectTimeoutMs && t.ms !== tuning.pingMs;
    const settled = (attempts: number) => eventually(
      () => proxy.connections >= attempts && timers.pending.length === 1 && isRetry(timers.pending[0]!),
      `attempt ${attempts} failed and one retry scheduled`,
    );

    await cache.start();
    await settled(1);
    for (let attempt = 2; attempt <= 12; attempt++) {
      expect(timers.pending.filter(isRetry)).toHaveLength(1); // exactly one reconnect pending, never more
      expect(timers.fireNext(isRetry)).toBe(true);
      await settled(attempt);
      expect(proxy.connections).toBe(attempt); // nothing connects between two steps
    }
    const delays = timers.scheduled.filter((ms) => isRetry({ ms }));
    expect(delays).toEqual([75, 150, 300, 600, 1_200, 1_200, 1_200, 1_200, 1_200, 1_200, 1_200, 1_200]);
    expect(cache.listening).toBe(false);
  });
});

describe('a half-open listener path', () => {
  let database: TestDatabase;
  let db: Db;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = openDb(database.url);
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  it('is noticed by the ping, and the listener reconnects', async () => {
    const target = new URL(database.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    open.push(proxy);
    const u = new URL(database.url);
    u.hostname = '127.0.0.1';
    u.port = String(proxy.port);
    const timers = manualTimers();
    const tuning = { timers, initialBackoffMs: 100, maxBackoffMs: 1_600, connectTimeoutMs: 777_777, pingMs: 888_888, pingTimeoutMs: 999_999, random: () => 0.5 };
    const cache = new AgentCache(db, u.toString(), { listener: tuning });
    open.push(cache);
    await cache.start();
    expect(cache.listening).toBe(true);

    proxy.mode = 'stall'; // the connection stays open but nothing goes through: NOTIFYs would be lost silently
    expect(timers.fireNext((t) => t.ms === tuning.pingMs)).toBe(true);
    await eventually(() => timers.pending.some((t) => t.ms === tuning.pingTimeoutMs), 'the ping sent and its deadline armed');
    expect(timers.fireNext((t) => t.ms === tuning.pingTimeoutMs)).toBe(true);
    expect(cache.listening).toBe(false);

    proxy.mode = 'forward';
    expect(timers.fireNext((t) => t.ms === 75)).toBe(true); // the one reconnect
    await eventually(() => cache.listening, 'listening again');
    await eventually(async () => (await listenerConnections(database.url, database.name)) === 1, 'one listener connection');
  });
});

describe('backoffDelay', () => {
  it('doubles up to the cap and keeps half of it fixed', () => {
    const at = (attempt: number, r: number) => backoffDelay(attempt, 250, 10_000, () => r);
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((n) => at(n, 0))).toEqual([125, 250, 500, 1_000, 2_000, 4_000, 5_000, 5_000]);
    expect([1, 2, 7, 50].map((n) => at(n, 0.999_999)).map(Math.round)).toEqual([250, 500, 10_000, 10_000]);
  });
});
