// Death is decided by the lease, not by a late heartbeat. Workers reach Postgres through a TCP
// proxy (test/support/tcp-proxy.ts) so the database can vanish under them:
//  - everyone loses Postgres for longer than the instance TTL while a model answers: the answer is
//    kept when the database is back (nobody judges anybody dead right after an outage);
//  - one worker alone is cut off: it stops its own turn before the others may take its session,
//    the others recover the session, and when it comes back it learns it was fenced;
//  - a connection goes half-open for good: the turn still ends, on a fresh connection.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { admit, enqueueTurn, getAdmission, getObligationForAdmission, unknownNotice, type Config } from '../../../services/core/index.js';
import type { RunningWorker } from '../../../services/worker/index.js';
import { createTestDatabase, eventually, testConfig, type TestDatabase } from '../../support/services.js';
import { startFakeOpenAI, lastUser, type FakeOpenAI } from '../../support/fake-openai.js';
import { createTestAgent, openTestRuntime, startTestWorker, type TestRuntime } from '../../support/system.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

let database: TestDatabase;
let model: FakeOpenAI;
let observer: TestRuntime; // direct connection: admits and inspects, runs no worker
let agentId: string;
const prefix = `test-${randomUUID()}`;
const opened: { stop(): Promise<void> }[] = [];
const gates = new Map<string, () => void>();
const gate = (name: string) => new Promise<void>((resolve) => gates.set(name, resolve));
const holds = new Map<string, Promise<void>>();

beforeAll(async () => {
  database = await createTestDatabase();
  holds.set('answer during the outage', gate('answer during the outage'));
  holds.set('think while cut off', new Promise<void>(() => undefined));
  holds.set('answer on a dead connection', gate('answer on a dead connection'));
  model = await startFakeOpenAI((b) => {
    const text = lastUser(b);
    const hold = holds.get(text);
    return hold ? { hold, text: `kept: ${text}` } : { text: `echo: ${text}` };
  });
  observer = await openTestRuntime(testConfig(database.url, { HERMES_QUEUE_PREFIX: prefix }));
  agentId = await createTestAgent(observer, model.baseURL);
});

// Each test's workers and proxies go with it: a leftover worker would take the next test's jobs.
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.stop().catch(() => undefined);
});

afterAll(async () => {
  await observer?.close();
  await model?.close();
  await database?.drop();
});

/** Short timers; the lease outlives the outages, the instance TTL does not. */
const fast = (databaseUrl: string): Config => testConfig(databaseUrl, {
  HERMES_QUEUE_PREFIX: prefix, HERMES_LEASE_TTL_SECONDS: 30, HERMES_LEASE_RENEW_SECONDS: 1, HERMES_INSTANCE_TTL_SECONDS: 3,
  HERMES_HEARTBEAT_SECONDS: 0.5, HERMES_SWEEP_SECONDS: 0.5, HERMES_DB_QUERY_TIMEOUT_SECONDS: 1,
});

async function worker(databaseUrl: string): Promise<RunningWorker & { instanceId: string }> {
  const rt = await openTestRuntime(fast(databaseUrl));
  const w = await startTestWorker(rt);
  opened.push({ stop: async () => { await w.close(); await rt.close(); } });
  return Object.assign(w, { instanceId: w.instance.id });
}

async function proxy(): Promise<TcpProxy> {
  const u = new URL(database.url);
  const p = await startTcpProxy({ host: u.hostname, port: Number(u.port) });
  opened.push({ stop: () => p.close() });
  return p;
}

async function send(session: string, content: string) {
  const a = await admit(observer.db, { agentId, platform: 'api', sessionKey: `agent:default/demo:api:dm:${session}`, user: { platformUserId: session }, content, replyTarget: { kind: 'api' } });
  await enqueueTurn(observer.queues, { admissionId: a.admissionId });
  return a;
}

const settled = (id: string) => eventually(async () => {
  const a = await getAdmission(observer.db.pool, id);
  return a && (a.state === 'terminal' || a.state === 'unknown') ? a : undefined;
}, `admission ${id} settled`, 60_000, 100);

/** True once every heartbeat of `ids` is older than the instance TTL (3 s) in Postgres' own clock. */
const allStale = (ids: string[]) => eventually(async () => {
  const { rows } = await observer.db.pool.query(`SELECT count(*)::int AS n FROM worker_instances WHERE id = ANY($1::uuid[]) AND heartbeat_at < now() - interval '3 seconds'`, [ids]);
  return rows[0].n === ids.length ? true : undefined;
}, 'heartbeats older than the instance TTL', 30_000, 100);

describe('fencing by the lease', () => {
  it('keeps an answer the model gave while every worker had lost Postgres for longer than the instance TTL', async () => {
    const link = await proxy();
    const a = await worker(link.via(database.url));
    const b = await worker(link.via(database.url));
    const adm = await send('outage', 'answer during the outage');
    await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'answer during the outage'), 'the model call in flight', 30_000);
    link.mode = 'reset'; // every connection reset, new ones dropped: a Postgres restart or failover
    gates.get('answer during the outage')!(); // the model answers while nobody reaches Postgres
    await allStale([a.instanceId, b.instanceId]);
    link.mode = 'forward';
    const end = await settled(adm.admissionId);
    expect(end).toMatchObject({ state: 'terminal', outcome: 'completed' });
    expect((await getObligationForAdmission(observer.db.pool, adm.admissionId))?.content).toBe('kept: answer during the outage');
    expect(model.requests.filter((r) => lastUser(r.body) === 'answer during the outage')).toHaveLength(1);
  }, 90_000);

  it('fences a worker cut off alone before its session is taken over, recovers the session, and the worker learns it was fenced', async () => {
    const link = await proxy();
    const lonely = await worker(link.via(database.url));
    const adm = await send('alone', 'think while cut off');
    const seen = await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'think while cut off'), 'the model call in flight', 30_000);
    await worker(database.url); // a healthy worker beside it
    link.mode = 'stall';
    const end = await settled(adm.admissionId);
    // By the time anyone could settle it, the cut-off worker had already stopped the turn itself.
    await eventually(() => seen.aborted || undefined, 'the cut-off call aborted'); // seen when its socket closes
    expect(end.state).toBe('unknown');
    expect((await getObligationForAdmission(observer.db.pool, adm.admissionId))?.content).toBe(unknownNotice);
    const next = await send('alone', 'anyone there?');
    expect(await settled(next.admissionId)).toMatchObject({ state: 'terminal', outcome: 'completed' });
    link.mode = 'forward'; // its late writes are refused by the epoch; nothing it holds is overwritten
    await eventually(async () => {
      const { rows } = await observer.db.pool.query(`SELECT heartbeat_at > now() - interval '1 second' AS fresh FROM worker_instances WHERE id = $1`, [lonely.instanceId]);
      return rows[0]?.fresh ? true : undefined;
    }, 'the cut-off worker to heartbeat again');
    expect((await getAdmission(observer.db.pool, adm.admissionId))?.state).toBe('unknown');
    expect(model.requests.filter((r) => lastUser(r.body) === 'think while cut off')).toHaveLength(1);
  }, 90_000);

  it('ends a turn whose connections went half-open for good, on fresh connections', async () => {
    const link = await proxy();
    await worker(link.via(database.url));
    const adm = await send('half-open', 'answer on a dead connection');
    await eventually(() => model.inFlight().find((r) => lastUser(r.body) === 'answer on a dead connection'), 'the model call in flight', 30_000);
    link.strand(); // every open connection of the worker now swallows what it is sent
    gates.get('answer on a dead connection')!();
    const end = await settled(adm.admissionId);
    expect(end).toMatchObject({ state: 'terminal', outcome: 'completed' });
    expect((await getObligationForAdmission(observer.db.pool, adm.admissionId))?.content).toBe('kept: answer on a dead connection');
  }, 90_000);
});
