// The ledger's state machines, enforced in SQL: illegal transitions are refused by the database
// itself, leases exclude each other, and dedupe yields one admission per inbound event.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acquireLease, admit, claimDelivery, finishTurn, markDelivered, markFailed, deferDelivery, openDb, publishRevision, registerInstance,
  releaseLease, renewLease, startNextTurn, LeaseLostError, type Db,
} from '../../../services/core/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';
import { testAgent } from '../../support/system.js';

let database: TestDatabase;
let db: Db;
let agentId: string;

beforeAll(async () => {
  database = await createTestDatabase();
  db = openDb(database.url);
  agentId = (await publishRevision(db, testAgent('http://127.0.0.1:1/v1'))).agentId;
});
afterAll(async () => {
  await db?.close();
  await database?.drop();
});

const input = (key: string, extra: object = {}) => ({ agentId, platform: 'api', sessionKey: key, user: { platformUserId: 'u' }, content: 'hi', ...extra });

describe('admissions', () => {
  it('dedupes an inbound event: concurrent duplicates get one admission', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => admit(db, input('k-dedupe', { eventId: 'evt-1' }))));
    expect(new Set(results.map((r) => r.admissionId)).size).toBe(1);
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM admissions WHERE session_id = $1`, [results[0]!.sessionId]);
    expect(rows[0].n).toBe(1);
  });

  it('refuses illegal transitions in the database itself', async () => {
    const a = await admit(db, input('k-sm'));
    await expect(db.pool.query(`UPDATE admissions SET state = 'unknown' WHERE id = $1`, [a.admissionId])).rejects.toThrow(/illegal transition queued -> unknown/);
    await db.pool.query(`UPDATE admissions SET state = 'terminal', outcome = 'discarded' WHERE id = $1`, [a.admissionId]);
    await expect(db.pool.query(`UPDATE admissions SET state = 'queued' WHERE id = $1`, [a.admissionId])).rejects.toThrow(/illegal transition|is final/);
    await expect(db.pool.query(`UPDATE messages SET content = 'x'`)).resolves.toBeDefined(); // no rows yet
  });

  it('keeps the transcript append-only', async () => {
    const me = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-append'));
    const lease = (await acquireLease(db.pool, a.sessionId, me.id, 30))!;
    await startNextTurn(db, lease);
    await expect(db.pool.query(`UPDATE messages SET content = 'rewritten' WHERE session_id = $1`, [a.sessionId])).rejects.toThrow(/append-only/);
  });
});

describe('session leases', () => {
  it('exclude a second holder, bump the epoch, and fence a stale holder out of finishing', async () => {
    const w1 = await registerInstance(db.pool, 'worker');
    const w2 = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-lease'));
    const l1 = (await acquireLease(db.pool, a.sessionId, w1.id, 30))!;
    expect(await acquireLease(db.pool, a.sessionId, w2.id, 30)).toBeUndefined();
    const started = (await startNextTurn(db, l1))!;
    expect(started.state).toBe('started');
    expect(started.ownerEpoch).toBe(l1.epoch);
    // The lease expires; another worker takes it.
    await db.pool.query(`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, [a.sessionId]);
    const l2 = (await acquireLease(db.pool, a.sessionId, w2.id, 30))!;
    expect(l2.epoch).toBe(l1.epoch + 1);
    expect(await renewLease(db.pool, l1, 30)).toBe(false);
    await expect(finishTurn(db, l1, started.id, { outcome: 'completed', reply: 'late' })).rejects.toBeInstanceOf(LeaseLostError);
    await releaseLease(db.pool, l2);
    expect(await acquireLease(db.pool, a.sessionId, w1.id, 30)).toMatchObject({ epoch: l2.epoch + 1 });
  });
});

describe('delivery obligations', () => {
  it('walk pending → attempting → failed → attempting → delivered, fenced by owner', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const other = { ...w, id: randomUUID() };
    const a = await admit(db, input('k-deliver'));
    const lease = (await acquireLease(db.pool, a.sessionId, w.id, 30))!;
    const adm = (await startNextTurn(db, lease))!;
    const { obligationId } = await finishTurn(db, lease, adm.id, { outcome: 'completed', reply: 'answer' });
    const claimed = (await claimDelivery(db.pool, obligationId, w, 30))!;
    expect(claimed).toMatchObject({ state: 'attempting', attempts: 1, possibleDuplicate: false });
    expect(await claimDelivery(db.pool, obligationId, w, 30)).toBeUndefined(); // owner alive: not claimable
    expect(await markDelivered(db.pool, obligationId, other)).toBe(false); // not the owner
    expect(await markFailed(db.pool, obligationId, w, 'platform 500', { maxAttempts: 3, maxAgeSeconds: 86_400, retryAfterSeconds: 0 })).toBe('failed');
    const again = (await claimDelivery(db.pool, obligationId, w, 30))!;
    expect(again.attempts).toBe(2);
    expect(await deferDelivery(db.pool, obligationId, w, new Date(Date.now() - 1000))).toBe(true); // flood control: no attempt spent
    const third = (await claimDelivery(db.pool, obligationId, w, 30))!;
    expect(third.attempts).toBe(2);
    expect(await markDelivered(db.pool, obligationId, w)).toBe(true);
    await expect(db.pool.query(`UPDATE delivery_obligations SET state = 'pending' WHERE id = $1`, [obligationId])).rejects.toThrow(/final|illegal/);
  });

  it('abandon after the last attempt, and flag a dead owner\'s re-send as a possible duplicate', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-abandon'));
    const lease = (await acquireLease(db.pool, a.sessionId, w.id, 30))!;
    const adm = (await startNextTurn(db, lease))!;
    const { obligationId } = await finishTurn(db, lease, adm.id, { outcome: 'completed', reply: 'x' });
    await claimDelivery(db.pool, obligationId, w, 30);
    // The owner dies while attempting: a new process takes the row over, marked possible duplicate.
    await db.pool.query(`UPDATE worker_instances SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [w.id]);
    const w2 = await registerInstance(db.pool, 'worker');
    const taken = (await claimDelivery(db.pool, obligationId, w2, 30))!;
    expect(taken).toMatchObject({ attempts: 2, possibleDuplicate: true });
    expect(await markFailed(db.pool, obligationId, w2, 'e', { maxAttempts: 2, maxAgeSeconds: 86_400, retryAfterSeconds: 0 })).toBe('abandoned');
  });
});
