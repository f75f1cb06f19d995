// The durable pending approval with real Postgres: park → /approve → allowed; park → /deny (with
// the user's words); park → timeout → expired; /stop while waiting → cancelled (a later /approve
// finds nothing); the waiting side keeps waiting through a Postgres outage and still takes the
// decision; only the waiting turn's own user decides.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import {
  admit, connectRedis, createLogger, decideApproval, openDb, readApproval, type Db,
} from '../../../services/core/index.js';
import { DurableApprovals } from '../../../services/worker/approvals.js';
import { createTestDatabase, eventually, serverUrls, type TestDatabase } from '../../support/services.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

let database: TestDatabase;
let db: Db;
let redis: Redis;
let agentId: string;

beforeAll(async () => {
  database = await createTestDatabase();
  db = openDb(database.url);
  redis = connectRedis(serverUrls().redisUrl);
  const { rows } = await db.pool.query<{ id: string }>(`INSERT INTO agents (id, namespace, name, updated_at) VALUES (gen_random_uuid(), 'default', 'demo', now()) RETURNING id`);
  agentId = rows[0]!.id;
});

afterAll(async () => {
  redis?.disconnect();
  await db?.close();
  await database?.drop();
});

const log = createLogger('test', 'silent');
const waiter = (admissionId: string, pool: Db = db) => new DurableApprovals({ db: pool, redis, prefix: `t-${admissionId}`, log, pollMs: 20 }, admissionId);

async function turn(sessionKey: string, user = 'u1', content = 'run it') {
  return admit(db, { agentId, platform: 'api', sessionKey, user: { platformUserId: user }, content, replyTarget: { kind: 'api' } });
}

/** The id of the admission's pending approval, once it is parked. */
const parkedFor = (admissionId: string) => eventually(async () => {
  const { rows } = await db.pool.query<{ id: string }>(`SELECT id FROM command_approvals WHERE admission_id = $1`, [admissionId]);
  return rows[0]?.id;
}, 'a parked approval');

const request = (timeoutSeconds = 60) => ({ command: 'kill -9 1', reason: 'killing processes', timeoutSeconds });

describe('durable pending approvals', () => {
  it('park → /approve → approved, taken once', async () => {
    const a = await turn('s-approve');
    const asked = waiter(a.admissionId).ask(request(), new AbortController().signal);
    const id = await parkedFor(a.admissionId);
    expect(await readApproval(db.pool, id)).toMatchObject({ status: 'pending', consumed: false });
    const approve = await turn('s-approve', 'u1', '/approve');
    expect(await decideApproval(db.pool, { decidingAdmissionId: approve.admissionId, decision: 'approved' })).toMatchObject({ id });
    expect(await asked).toEqual({ decision: 'approved' });
    expect(await readApproval(db.pool, id)).toMatchObject({ status: 'approved', consumed: true });
  });

  it('park → /deny with a reason; another user of the same session cannot decide it', async () => {
    const a = await turn('s-deny', 'alice');
    const asked = waiter(a.admissionId).ask(request(), new AbortController().signal);
    const id = await parkedFor(a.admissionId);
    const mallory = await turn('s-deny', 'mallory', '/approve');
    expect(await decideApproval(db.pool, { decidingAdmissionId: mallory.admissionId, decision: 'approved' })).toBeUndefined();
    expect(await readApproval(db.pool, id)).toMatchObject({ status: 'pending' });
    const deny = await turn('s-deny', 'alice', '/deny not now');
    await decideApproval(db.pool, { decidingAdmissionId: deny.admissionId, decision: 'denied', note: 'not now' });
    expect(await asked).toEqual({ decision: 'denied', note: 'not now' });
  });

  it('park → timeout → expired; a later /approve finds nothing', async () => {
    const a = await turn('s-timeout');
    expect(await waiter(a.admissionId).ask(request(1), new AbortController().signal)).toEqual({ decision: 'expired' });
    const id = await parkedFor(a.admissionId);
    expect(await readApproval(db.pool, id)).toMatchObject({ status: 'expired' });
    const late = await turn('s-timeout', 'u1', '/approve');
    expect(await decideApproval(db.pool, { decidingAdmissionId: late.admissionId, decision: 'approved' })).toBeUndefined();
  });

  it('/stop while waiting → cancelled, nothing approved', async () => {
    const a = await turn('s-stop');
    const stop = new AbortController();
    const asked = waiter(a.admissionId).ask(request(), stop.signal);
    const id = await parkedFor(a.admissionId);
    stop.abort(new Error('stopped'));
    expect(await asked).toEqual({ decision: 'cancelled' });
    expect(await readApproval(db.pool, id)).toMatchObject({ status: 'cancelled' });
  });

  it('keeps waiting through a Postgres outage and takes the decision made meanwhile', async () => {
    const proxy: TcpProxy = await startTcpProxy({ port: Number(new URL(database.url).port) });
    const viaProxy = openDb(proxy.via(database.url), { queryTimeoutMs: 500 });
    try {
      const a = await turn('s-outage');
      const asked = waiter(a.admissionId, viaProxy).ask(request(), new AbortController().signal);
      const id = await parkedFor(a.admissionId);
      proxy.mode = 'reset'; // the waiter's Postgres is gone
      proxy.strand();
      const approve = await turn('s-outage', 'u1', '/approve');
      await decideApproval(db.pool, { decidingAdmissionId: approve.admissionId, decision: 'approved' });
      expect(await readApproval(db.pool, id)).toMatchObject({ status: 'approved', consumed: false }); // nobody took it yet
      proxy.mode = 'forward';
      expect(await asked).toEqual({ decision: 'approved' });
      expect(await readApproval(db.pool, id)).toMatchObject({ consumed: true });
    } finally {
      await viaProxy.close();
      await proxy.close();
    }
  });
});
