// DM pairing's limits on a real Postgres, with an injected clock (SPEC): 8-character codes from an
// unambiguous alphabet, stored only hashed; 1 request per user per 10 min (one reminder, then
// silence); 3 pending per platform; 1 h expiry; 5 failed approvals lock the platform for 1 h.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  PAIRING_LIMITS, decidePairing, isPaired, openDb, publishRevision, requestPairing, type Db, type PairingAsk,
} from '../../../services/core/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/services.js';
import { testAgent } from '../../support/system.js';

let database: TestDatabase;
let db: Db;
let agentId: string;
const t0 = new Date('2026-12-01T10:00:00Z');
const at = (minutes: number) => new Date(t0.getTime() + minutes * 60_000);

beforeAll(async () => {
  database = await createTestDatabase();
  db = openDb(database.url);
  agentId = (await publishRevision(db, testAgent('http://127.0.0.1:1/v1'))).agentId;
});

afterAll(async () => {
  await db?.close();
  await database?.drop();
});

beforeEach(async () => {
  await db.pool.query('DELETE FROM pairing_requests; DELETE FROM paired_users; DELETE FROM pairing_locks');
});

const ask = (user: string, now: Date, platform = 'slack') =>
  db.tx((sql) => requestPairing(sql, { agentId, platform, user: { id: user }, replyTarget: { kind: platform, channel: `D${user}` }, now }));
const decide = (code: string, now: Date, decision: 'approve' | 'deny' = 'approve', platform?: string) =>
  decidePairing(db, { agentId, code, decision, by: 'test', now, platforms: ['slack', 'telegram'], ...(platform ? { platform } : {}) });
const codeOf = (a: PairingAsk) => {
  if (a.kind !== 'code') throw new Error(`expected a code, got ${a.kind}`);
  return a.code;
};

describe('pairing codes', () => {
  it('are 8 characters of an alphabet without 0/O/1/I/L, and only their hash is stored', async () => {
    const code = codeOf(await ask('UCODE', t0));
    expect(code).toMatch(/^[A-HJKMNP-Z2-9]{8}$/);
    expect(PAIRING_LIMITS.alphabet).not.toMatch(/[0O1IL]/);
    const { rows } = await db.pool.query<{ row: string }>('SELECT row_to_json(p)::text AS row FROM pairing_requests p');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.row).not.toContain(code);
    // Case and separators do not matter when the owner types it.
    const lower = `${code.slice(0, 4).toLowerCase()}-${code.slice(4)}`;
    expect((await decide(lower, at(1))).ok).toBe(true);
    expect(await isPaired(db.pool, agentId, 'slack', 'UCODE')).toBe(true);
  });
});

describe('pairing limits', () => {
  it('gives one request per user per 10 minutes: one reminder, then silence; a new code after 10 minutes replaces the old', async () => {
    const first = codeOf(await ask('UBUSY', t0));
    expect(await ask('UBUSY', at(1))).toMatchObject({ kind: 'rate-limited', remind: true });
    expect(await ask('UBUSY', at(2))).toMatchObject({ kind: 'rate-limited', remind: false });
    expect(await ask('UBUSY', at(9))).toMatchObject({ kind: 'rate-limited', remind: false });
    const second = codeOf(await ask('UBUSY', at(11)));
    expect(second).not.toBe(first);
    // The superseded code no longer approves anything; the new one does.
    expect(await decide(first, at(12))).toMatchObject({ ok: false, reason: 'not-found' });
    expect(await decide(second, at(12))).toMatchObject({ ok: true, request: { userId: 'UBUSY' } });
  });

  it('keeps at most 3 pending requests per platform; another user is refused until one expires', async () => {
    for (const u of ['UP1', 'UP2', 'UP3']) codeOf(await ask(u, t0));
    expect(await ask('UP4', at(1))).toEqual({ kind: 'full' });
    // Another platform of the same agent has its own three.
    codeOf(await ask('UP4', at(1), 'telegram'));
    // An hour later the three have expired: room again.
    codeOf(await ask('UP4', at(61)));
  });

  it('expires a code after 1 hour', async () => {
    const code = codeOf(await ask('ULATE', t0));
    expect(await decide(code, at(61))).toMatchObject({ ok: false, reason: 'not-found' });
    expect(await isPaired(db.pool, agentId, 'slack', 'ULATE')).toBe(false);
    const fresh = codeOf(await ask('UFRESH', t0));
    expect(await decide(fresh, at(59))).toMatchObject({ ok: true });
  });

  it('locks the platform\'s pairing for 1 hour after 5 failed approvals, even for a right code and for new requests', async () => {
    const good = codeOf(await ask('UWAIT', t0));
    for (let i = 0; i < 4; i++) expect(await decide('WRONGCDE', at(1), 'approve', 'slack')).toMatchObject({ ok: false, reason: 'not-found' });
    expect(await decide('WRONGCDE', at(2), 'deny', 'slack')).toMatchObject({ ok: false, reason: 'locked' });
    expect(await decide(good, at(3))).toMatchObject({ ok: false, reason: 'locked' });
    expect(await ask('UNEW', at(3))).toMatchObject({ kind: 'locked' });
    // Another platform is not locked.
    codeOf(await ask('UNEW', at(3), 'telegram'));
    // After the hour: new requests and approvals work again (the old code has expired by then).
    expect(await decide(good, at(63))).toMatchObject({ ok: false, reason: 'not-found' });
    const again = codeOf(await ask('UWAIT', at(63)));
    expect(await decide(again, at(64))).toMatchObject({ ok: true });
    expect(await isPaired(db.pool, agentId, 'slack', 'UWAIT')).toBe(true);
  });

  it('denies a request: the user is not paired and the code is spent', async () => {
    const code = codeOf(await ask('UNO', t0));
    expect(await decide(code, at(1), 'deny')).toMatchObject({ ok: true });
    expect(await isPaired(db.pool, agentId, 'slack', 'UNO')).toBe(false);
    expect(await decide(code, at(2))).toMatchObject({ ok: false, reason: 'not-found' });
  });
});
