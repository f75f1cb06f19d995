// The ledger's state machines, enforced in SQL: illegal transitions are refused by the database
// itself, leases exclude each other, and dedupe yields one admission per inbound event.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acquireLease, admit, claimDelivery, finishTurn, markDelivered, markFailed, deferDelivery, openDb, publishRevision, registerInstance,
  releaseLease, renewLease, startNextTurn, LeaseLostError, markStopped, settleOrphanedTurns, freeDeadOwnersLeases, getAdmission,
  getObligationForAdmission, interruptedNotice, parkClarification, answerClarification, listStrandedQueued, cutTurn, suspendedNotice, listDueDeliveries, abandonExpired, admitAnswered, startNewSession, type Db,
} from '../../../services/core/index.js';
import { readTurnContext } from '../../../services/core/ledger/turn-context.js';
import { createTestDatabase, eventually, type TestDatabase } from '../../support/services.js';
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

/** A steady judge with a 30 s instance TTL. */
const judge = { instanceTtlSeconds: 30, steady: true };

/** A platform the worker pushes replies to (api replies are read by the caller, so delivered at once). */
const pushed = { platform: 'test-push' };

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
    const lease = (await acquireLease(db.pool, a.sessionId, me.id, 30, judge))!;
    await startNextTurn(db, lease);
    await expect(db.pool.query(`UPDATE messages SET content = 'rewritten' WHERE session_id = $1`, [a.sessionId])).rejects.toThrow(/append-only/);
  });
});

describe('session leases', () => {
  it('exclude a second holder, bump the epoch, and fence a stale holder out of finishing', async () => {
    const w1 = await registerInstance(db.pool, 'worker');
    const w2 = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-lease'));
    const l1 = (await acquireLease(db.pool, a.sessionId, w1.id, 30, judge))!;
    expect(await acquireLease(db.pool, a.sessionId, w2.id, 30, judge)).toBeUndefined();
    const started = (await startNextTurn(db, l1))!;
    expect(started.state).toBe('started');
    expect(started.ownerEpoch).toBe(l1.epoch);
    // The lease expires; another worker takes it.
    await db.pool.query(`UPDATE session_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, [a.sessionId]);
    const l2 = (await acquireLease(db.pool, a.sessionId, w2.id, 30, judge))!;
    expect(l2.epoch).toBe(l1.epoch + 1);
    expect(await renewLease(db.pool, l1, 30)).toBe(false);
    await expect(finishTurn(db, l1, started.id, { outcome: 'completed', reply: 'late' })).rejects.toBeInstanceOf(LeaseLostError);
    await releaseLease(db.pool, l2);
    expect(await acquireLease(db.pool, a.sessionId, w1.id, 30, judge)).toMatchObject({ epoch: l2.epoch + 1 });
  });
});

describe('delivery obligations', () => {
  it('walk pending → attempting → failed → attempting → delivered, fenced by owner', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const other = { ...w, id: randomUUID() };
    const a = await admit(db, input('k-deliver', pushed));
    const lease = (await acquireLease(db.pool, a.sessionId, w.id, 30, judge))!;
    const adm = (await startNextTurn(db, lease))!;
    const { obligationId } = await finishTurn(db, lease, adm.id, { outcome: 'completed', reply: 'answer' });
    const claimed = (await claimDelivery(db.pool, obligationId, w, judge, 60))!;
    expect(claimed).toMatchObject({ state: 'attempting', attempts: 1, possibleDuplicate: false });
    expect(await claimDelivery(db.pool, obligationId, w, judge, 60)).toBeUndefined(); // owner alive: not claimable
    expect(await markDelivered(db.pool, obligationId, other)).toBe(false); // not the owner
    expect(await markFailed(db.pool, obligationId, w, 'platform 500', { maxAttempts: 3, maxAgeSeconds: 86_400, retryAfterSeconds: 0 })).toBe('failed');
    const again = (await claimDelivery(db.pool, obligationId, w, judge, 60))!;
    expect(again.attempts).toBe(2);
    expect(await deferDelivery(db.pool, obligationId, w, new Date(Date.now() - 1000))).toBe(true); // flood control: no attempt spent
    const third = (await claimDelivery(db.pool, obligationId, w, judge, 60))!;
    expect(third.attempts).toBe(2);
    expect(await markDelivered(db.pool, obligationId, w)).toBe(true);
    await expect(db.pool.query(`UPDATE delivery_obligations SET state = 'pending' WHERE id = $1`, [obligationId])).rejects.toThrow(/final|illegal/);
  });

  it('abandon after the last attempt, and flag a dead owner\'s re-send as a possible duplicate', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-abandon', pushed));
    const lease = (await acquireLease(db.pool, a.sessionId, w.id, 30, judge))!;
    const adm = (await startNextTurn(db, lease))!;
    const { obligationId } = await finishTurn(db, lease, adm.id, { outcome: 'completed', reply: 'x' });
    await claimDelivery(db.pool, obligationId, w, judge, 60);
    // The owner dies while attempting: a new process takes the row over, marked possible duplicate.
    await db.pool.query(`UPDATE worker_instances SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [w.id]);
    const w2 = await registerInstance(db.pool, 'worker');
    const taken = (await claimDelivery(db.pool, obligationId, w2, judge, 60))!;
    expect(taken).toMatchObject({ attempts: 2, possibleDuplicate: true });
    expect(await markFailed(db.pool, obligationId, w2, 'e', { maxAttempts: 2, maxAgeSeconds: 86_400, retryAfterSeconds: 0 })).toBe('abandoned');
  });
});

describe('who may take a session over', () => {
  it('takes a lease from a dead owner only as a steady judge, or when the owner is marked stopped', async () => {
    const dead = await registerInstance(db.pool, 'worker');
    const me = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-takeover'));
    const held = (await acquireLease(db.pool, a.sessionId, dead.id, 600, judge))!;
    await db.pool.query(`UPDATE worker_instances SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [dead.id]);
    // Right after our own outage we are not steady: a stale heartbeat alone proves nothing.
    expect(await acquireLease(db.pool, a.sessionId, me.id, 600, { ...judge, steady: false })).toBeUndefined();
    const taken = (await acquireLease(db.pool, a.sessionId, me.id, 600, judge))!;
    expect(taken.epoch).toBe(held.epoch + 1);
    // A stopped owner is dead for anyone.
    const b = await admit(db, input('k-takeover-stopped'));
    const other = await registerInstance(db.pool, 'worker');
    await acquireLease(db.pool, b.sessionId, other.id, 600, judge);
    expect(await acquireLease(db.pool, b.sessionId, me.id, 600, { ...judge, steady: false })).toBeUndefined();
    await markStopped(db.pool, other.id);
    expect(await acquireLease(db.pool, b.sessionId, me.id, 600, { ...judge, steady: false })).toBeDefined();
  });

  it('settles a started turn only once its holding ended, however late its owner\'s heartbeat', async () => {
    const owner = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-late-heartbeat'));
    const lease = (await acquireLease(db.pool, a.sessionId, owner.id, 600, judge))!;
    await startNextTurn(db, lease);
    await db.pool.query(`UPDATE worker_instances SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [owner.id]);
    expect(await settleOrphanedTurns(db)).not.toContain(a.admissionId); // the lease still holds
    expect(await freeDeadOwnersLeases(db.pool, judge)).toContain(a.sessionId);
    expect(await settleOrphanedTurns(db)).toContain(a.admissionId);
    expect((await getAdmission(db.pool, a.admissionId))?.state).toBe('unknown');
  });

  it('settles unattended (cron) work interrupted, not unknown', async () => {
    const owner = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-cron', { platform: 'cron' }));
    const lease = (await acquireLease(db.pool, a.sessionId, owner.id, 600, judge))!;
    await startNextTurn(db, lease);
    await releaseLease(db.pool, lease);
    expect(await settleOrphanedTurns(db)).toContain(a.admissionId);
    expect(await getAdmission(db.pool, a.admissionId)).toMatchObject({ state: 'terminal', outcome: 'interrupted' });
    expect((await getObligationForAdmission(db.pool, a.admissionId))?.content).toBe(interruptedNotice);
  });

  it('lists one stranded admission per session, so sessions that cannot start never starve the others', async () => {
    const live = await registerInstance(db.pool, 'worker');
    const busy = await admit(db, input('k-busy'));
    await admit(db, input('k-busy'));
    await acquireLease(db.pool, busy.sessionId, live.id, 600, judge); // a live holder drains it
    const idle1 = await admit(db, input('k-idle'));
    await admit(db, input('k-idle'));
    const idle2 = await admit(db, input('k-idle-2'));
    const listed = (await listStrandedQueued(db.pool, 0, judge)).map((r) => r.id);
    expect(listed).toContain(idle1.admissionId);
    expect(listed).toContain(idle2.admissionId);
    const { rows } = await db.pool.query(`SELECT session_id FROM admissions WHERE id = ANY($1::uuid[])`, [listed]);
    expect(new Set(rows.map((r) => r.session_id)).size).toBe(listed.length); // the head of each session only
    expect(rows.map((r) => r.session_id)).not.toContain(busy.sessionId);
  });
});

describe('shutdown cuts', () => {
  it('resume a cut turn once per cut and suspend the session at the third cut in a row; the key then gets a new session', async () => {
    const w = await registerInstance(db.pool, 'worker');
    let adm = await admit(db, input('k-cuts'));
    const sessionId = adm.sessionId;
    for (let cut = 1; cut <= 3; cut++) {
      const lease = (await acquireLease(db.pool, sessionId, w.id, 60, judge))!;
      const started = (await startNextTurn(db, lease))!;
      const res = await cutTurn(db, lease, started.id, { reply: `partial ${cut}` });
      await releaseLease(db.pool, lease);
      expect(await getAdmission(db.pool, started.id)).toMatchObject({ state: 'terminal', outcome: 'interrupted' });
      const { rows: [s] } = await db.pool.query(`SELECT state, shutdown_cuts FROM sessions WHERE id = $1`, [sessionId]);
      if (cut < 3) {
        expect(res.resumed).toBe(true);
        expect(s).toEqual({ state: 'resume_pending', shutdown_cuts: cut });
        const resume = await getAdmission(db.pool, (res as { resumeAdmissionId: string }).resumeAdmissionId);
        expect(resume).toMatchObject({ state: 'queued', intent: 'resume', resumeOf: started.id, sessionId });
      } else {
        expect(res.resumed).toBe(false);
        expect(s).toEqual({ state: 'suspended', shutdown_cuts: 3 });
        expect((await getObligationForAdmission(db.pool, started.id))?.content).toBe(suspendedNotice);
      }
    }
    const { rows: partials } = await db.pool.query(`SELECT content FROM messages WHERE session_id = $1 AND interrupted ORDER BY seq`, [sessionId]);
    expect(partials.map((r) => r.content)).toEqual(['partial 1', 'partial 2', 'partial 3']);
    adm = await admit(db, input('k-cuts'));
    expect(adm.sessionId).not.toBe(sessionId);
  });

  it('a cut turn of a session /new ended is not resumed: the session stays ended, nothing more is said', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const adm = await admit(db, input('k-cut-ended'));
    const lease = (await acquireLease(db.pool, adm.sessionId, w.id, 60, judge))!;
    const started = (await startNextTurn(db, lease))!;
    const renew = await admitAnswered(db, input('k-cut-ended', { content: '/new' }), async (sql, a) => {
      await startNewSession(sql, a.sessionId, a.admissionId);
      return 'new';
    });
    expect(renew.sessionId).toBe(adm.sessionId);
    const res = await cutTurn(db, lease, started.id, { reply: 'half' });
    await releaseLease(db.pool, lease);
    expect(res).toEqual({ resumed: false, ended: true });
    expect(await getAdmission(db.pool, started.id)).toMatchObject({ state: 'terminal', outcome: 'interrupted' });
    const { rows: [s] } = await db.pool.query(`SELECT state FROM sessions WHERE id = $1`, [adm.sessionId]);
    expect(s).toEqual({ state: 'ended' });
    const { rows } = await db.pool.query(`SELECT 1 FROM admissions WHERE session_id = $1 AND state = 'queued'`, [adm.sessionId]);
    expect(rows).toHaveLength(0);
    expect(await getObligationForAdmission(db.pool, started.id)).toBeUndefined();
  });

  /** Resolves once a session of this test's database waits for a lock, or once `settled` settles (it did not wait). */
  const lockWaitOr = async (settled: Promise<unknown>) => {
    let done = false;
    settled.then(() => { done = true; }, () => { done = true; });
    await eventually(async () => done || (await db.pool.query(
      `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()`)).rows.length > 0, 'a lock wait');
  };

  it('a message admitted while /new commits lands in the new session, never queued in the ended one', async () => {
    const first = await admit(db, input('k-new-race'));
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    let inside!: () => void;
    const rebound = new Promise<void>((r) => { inside = r; });
    let fresh = '';
    const renew = admitAnswered(db, input('k-new-race', { content: '/new' }), async (sql, a) => {
      fresh = (await startNewSession(sql, a.sessionId, a.admissionId)).id;
      inside();
      await held; // /new has rebound the key and dropped the queue, and has not committed yet
      return 'new';
    }, { rebindsKey: true });
    await rebound;
    const racer = admit(db, input('k-new-race', { content: 'in between' }));
    await lockWaitOr(racer); // it waits for /new (the old code admitted it into the old session at once)
    release();
    await renew;
    const msg = await racer;
    expect(msg.sessionId).toBe(fresh);
    expect(msg.sessionId).not.toBe(first.sessionId);
    expect(await getAdmission(db.pool, msg.admissionId)).toMatchObject({ state: 'queued' });
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM admissions WHERE session_id = $1 AND state = 'queued'`, [first.sessionId]);
    expect(rows[0].n).toBe(0);
  });

  it('two /new at once in one conversation both answer (no deadlock): each ends the session it found', async () => {
    const first = await admit(db, input('k-new-twice'));
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    let inside!: () => void;
    const entered = new Promise<void>((r) => { inside = r; });
    const news: string[] = [];
    const renew = (gate: boolean) => admitAnswered(db, input('k-new-twice', { content: '/new' }), async (sql, a) => {
      if (gate) { inside(); await held; }
      news.push((await startNewSession(sql, a.sessionId, a.admissionId)).id);
      return 'new';
    }, { rebindsKey: true });
    const a = renew(true);
    await entered;
    const b = renew(false);
    await lockWaitOr(b); // the second /new waits for the first (the old code let both admit, then deadlocked on the key)
    release();
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.sessionId).toBe(first.sessionId);
    expect(rb.sessionId).toBe(news[0]);
    const { rows } = await db.pool.query(`SELECT session_id FROM session_keys WHERE agent_id = $1 AND key = 'k-new-twice'`, [agentId]);
    expect(rows[0].session_id).toBe(news[1]);
  });

  it('a turn that ends on its own breaks the streak', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const adm = await admit(db, input('k-streak'));
    let lease = (await acquireLease(db.pool, adm.sessionId, w.id, 60, judge))!;
    const res = await cutTurn(db, lease, (await startNextTurn(db, lease))!.id, { reply: '' });
    expect(res.resumed).toBe(true);
    const resumed = (await startNextTurn(db, lease))!;
    expect(resumed.intent).toBe('resume');
    await finishTurn(db, lease, resumed.id, { outcome: 'completed', reply: 'done' });
    await releaseLease(db.pool, lease);
    const { rows: [s] } = await db.pool.query(`SELECT state, shutdown_cuts FROM sessions WHERE id = $1`, [adm.sessionId]);
    expect(s).toEqual({ state: 'active', shutdown_cuts: 0 });
    lease = (await acquireLease(db.pool, adm.sessionId, w.id, 60, judge))!;
    await releaseLease(db.pool, lease);
  });
  it('a cut turn resumes before the messages admitted while it ran: the session keeps its order', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const first = await admit(db, input('k-resume-order', { content: 'first' }));
    const lease = (await acquireLease(db.pool, first.sessionId, w.id, 60, judge))!;
    expect((await startNextTurn(db, lease))!.id).toBe(first.admissionId);
    const later = await admit(db, input('k-resume-order', { content: 'later' }));
    const res = await cutTurn(db, lease, first.admissionId, { reply: 'half an answer' });
    expect(res.resumed).toBe(true);
    const next = (await startNextTurn(db, lease))!;
    expect(next).toMatchObject({ intent: 'resume', resumeOf: first.admissionId });
    await finishTurn(db, lease, next.id, { outcome: 'completed', reply: 'the whole answer' });
    expect((await startNextTurn(db, lease))!.id).toBe(later.admissionId);
    await releaseLease(db.pool, lease);
  });
});

describe('clarify answers on the hot path', () => {
  it('admit says whether a question of this user waits; the claim carries the question a message answered', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const asking = await admit(db, input('k-clarify', { content: 'ask me' }));
    expect(asking.clarifyWaiting).toBe(false);
    const lease = (await acquireLease(db.pool, asking.sessionId, w.id, 60, judge))!;
    await startNextTurn(db, lease);
    const { clarification } = await parkClarification(db, { admissionId: asking.admissionId, question: 'which colour?', timeoutSeconds: 60 });
    // Another user of the same session (a group) has nothing waiting; the asker has.
    expect((await admit(db, input('k-clarify', { content: 'not me', user: { platformUserId: 'someone-else' } }))).clarifyWaiting).toBe(false);
    const answer = await admit(db, input('k-clarify', { content: 'blue' }));
    expect(answer.clarifyWaiting).toBe(true);
    expect((await answerClarification(db.pool, answer.admissionId, 'blue'))?.id).toBe(clarification.id);
    // A duplicate is not checked: the caller asks (absent).
    const first = await admit(db, input('k-clarify-dup', { eventId: 'evt-clarify' }));
    expect('clarifyWaiting' in (await admit(db, input('k-clarify-dup', { eventId: 'evt-clarify' })))).toBe(false);
    expect(first.duplicate).toBe(false);
    await finishTurn(db, lease, asking.admissionId, { outcome: 'completed', reply: 'blue it is' });
    const next = (await startNextTurn(db, lease))!;
    expect(next.id).toBe((await db.pool.query(`SELECT id FROM admissions WHERE session_id = $1 AND content = 'not me'`, [asking.sessionId])).rows[0].id);
    expect(next.answeredClarification).toBeNull();
    await finishTurn(db, lease, next.id, { outcome: 'completed', reply: 'ok' });
    const answering = (await startNextTurn(db, lease))!;
    expect(answering.id).toBe(answer.admissionId);
    expect(answering.answeredClarification).toEqual({ id: clarification.id, admissionId: asking.admissionId, consumed: false });
    await releaseLease(db.pool, lease);
  });
});

describe('delivery attempts have a deadline', () => {
  it('an attempt whose outcome was never recorded is claimable again after its deadline, as a possible duplicate, even with a live owner', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const w2 = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-attempt-deadline', pushed));
    const lease = (await acquireLease(db.pool, a.sessionId, w.id, 30, judge))!;
    const adm = (await startNextTurn(db, lease))!;
    const { obligationId } = await finishTurn(db, lease, adm.id, { outcome: 'completed', reply: 'answer' });
    expect(await claimDelivery(db.pool, obligationId, w, judge, 1)).toBeDefined();
    // The failure write never happened (Postgres blip). Both owners stay alive.
    expect(await claimDelivery(db.pool, obligationId, w2, judge, 60)).toBeUndefined();
    const again = await eventually(() => claimDelivery(db.pool, obligationId, w2, judge, 60), 'the attempt deadline to pass', 10_000, 100);
    expect(again).toMatchObject({ state: 'attempting', attempts: 2, possibleDuplicate: true });
    expect(await markFailed(db.pool, obligationId, w, 'too late', { maxAttempts: 3, maxAgeSeconds: 86_400, retryAfterSeconds: 0 })).toBeUndefined(); // no longer its attempt
  });

  it('an attempt stuck past its deadline is listed for the sweeper and abandoned when too old', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-attempt-old', pushed));
    const lease = (await acquireLease(db.pool, a.sessionId, w.id, 30, judge))!;
    const adm = (await startNextTurn(db, lease))!;
    const { obligationId } = await finishTurn(db, lease, adm.id, { outcome: 'completed', reply: 'answer' });
    await claimDelivery(db.pool, obligationId, w, judge, 60);
    expect(await listDueDeliveries(db.pool, judge, 0)).not.toContain(obligationId);
    await db.pool.query(`UPDATE delivery_obligations SET attempt_expires_at = now() - interval '1 second', created_at = now() - interval '2 days' WHERE id = $1`, [obligationId]);
    expect(await listDueDeliveries(db.pool, judge, 0)).toContain(obligationId);
    expect(await abandonExpired(db.pool, 86_400)).toBeGreaterThanOrEqual(1);
    expect((await getObligationForAdmission(db.pool, adm.id))?.state).toBe('abandoned');
  });
});

describe('pulled platforms', () => {
  it('an api reply is delivered in the transaction that stores it: no delivery job to run', async () => {
    const w = await registerInstance(db.pool, 'worker');
    const a = await admit(db, input('k-pulled'));
    const lease = (await acquireLease(db.pool, a.sessionId, w.id, 30, judge))!;
    const adm = (await startNextTurn(db, lease))!;
    const done = await finishTurn(db, lease, adm.id, { outcome: 'completed', reply: 'read me' });
    expect(done.deliveryPending).toBe(false);
    expect(await getObligationForAdmission(db.pool, adm.id)).toMatchObject({ state: 'delivered', attempts: 0, content: 'read me' });
    expect(await listDueDeliveries(db.pool, judge, 0)).not.toContain(done.obligationId);
  });
});

describe('per-turn reads stay bounded as a session grows', () => {
  it('the retries a turn reads (hermes_turn_context) come from an index of the few admissions that re-run another, not a walk of the session', async () => {
    const { sessionId } = await admit(db, input('k-long-session'));
    // A long conversation: 2 000 answered admissions, one of them re-run by a /retry.
    await db.pool.query(
      `INSERT INTO admissions (id, agent_id, session_id, platform, content, state, outcome)
       SELECT gen_random_uuid(), $1, $2, 'api', 'x', 'terminal', 'completed' FROM generate_series(1, 2000)`, [agentId, sessionId]);
    await db.pool.query(
      `INSERT INTO admissions (id, agent_id, session_id, platform, content, resume_of)
       SELECT gen_random_uuid(), $1, $2, 'api', '/retry', (SELECT id FROM admissions WHERE session_id = $2 LIMIT 1)`, [agentId, sessionId]);
    // Other sessions' re-runs, so many that reading every re-run of the table costs more than the
    // session's own (with a handful in the whole database the planner may rightly read them all).
    const other = await admit(db, input('k-other-retries'));
    await db.pool.query(
      `INSERT INTO admissions (id, agent_id, session_id, platform, content, state, outcome, resume_of)
       SELECT gen_random_uuid(), $1, $2, 'api', '/retry', 'terminal', 'completed', $3 FROM generate_series(1, 3000)`, [agentId, other.sessionId, other.admissionId]);
    await db.pool.query('ANALYZE admissions');
    const client = await db.pool.connect();
    try {
      // The statement exactly as the worker prepares it (named, once per connection), planned here.
      const ctx = await readTurnContext(client, sessionId, 0);
      expect(ctx?.retried).toHaveLength(1);
      const plans = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE hermes_turn_context('${sessionId}', 0, 1000)`);
      const plan = plans.rows.map((r) => r['QUERY PLAN']).join('\n');
      // An index scan of the partial index, or a bitmap scan of it (the planner's pick, by the statistics).
      // A clean-clone run read every re-run of the database through admissions_resume_of_idx instead:
      // it had five.
      expect(plan, plan).toMatch(/Index (Only )?Scan using admissions_session_id_resumes_idx on admissions r\b|Bitmap Index Scan on admissions_session_id_resumes_idx\b/);
    } finally {
      client.release();
    }
  });
});
