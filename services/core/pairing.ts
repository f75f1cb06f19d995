// DM pairing (SPEC "Gateway and sessions", issue 11 point 2): an unknown user who DMs an agent
// whose platform has `dmPairing` gets an 8-character code; an owner approves it (CLI, admin API,
// or an agent admin in chat) and the user is authorised on that platform from then on, after
// the allowlist. SPEC's limits: 1 h expiry, 1 request per user per 10 min, 3 pending per
// platform, 5 failed approvals lock the platform's pairing for 1 h. Codes are stored only as
// SHA-256 (salted with the agent id) and never logged. Every function takes `now`, so tests inject
// the clock; a platform's requests are serialised by a transaction-scoped advisory lock.
import { randomInt } from 'node:crypto';
import type { Db, Sql } from './db.js';
import { sha256 } from './agents.js';

export const PAIRING_LIMITS = {
  codeLength: 8,
  /** No 0/O, 1/I/L: nothing a person could misread when passing the code on. */
  alphabet: 'ABCDEFGHJKMNPQRSTUVWXYZ23456789',
  expiryMs: 60 * 60_000,
  requestIntervalMs: 10 * 60_000,
  maxPendingPerPlatform: 3,
  maxFailures: 5,
  lockMs: 60 * 60_000,
} as const;

/** A fresh code, uniformly from the alphabet (crypto.randomInt rejects biased draws). */
export function pairingCode(): string {
  const { alphabet, codeLength } = PAIRING_LIMITS;
  let code = '';
  for (let i = 0; i < codeLength; i++) code += alphabet[randomInt(alphabet.length)];
  return code;
}

/** What a person typed: case and separators do not matter (`abcd-efgh` = `ABCDEFGH`). */
export const normaliseCode = (typed: string) => typed.toUpperCase().replace(/[\s-]/g, '');
const codeHash = (agentId: string, code: string) => sha256(`pairing:${agentId}:${normaliseCode(code)}`);
const later = (now: Date, ms: number) => new Date(now.getTime() + ms);

export interface PairingRequestInput {
  agentId: string;
  platform: string;
  user: { id: string; name?: string };
  /** Where the code (and, later, the approval notice) goes: the DM it came from. */
  replyTarget: unknown;
  now: Date;
}

/** What an unknown DM gets. */
export type PairingAsk =
  /** A new code: send it (it exists only in this value and in the message). */
  | { kind: 'code'; requestId: string; code: string; expiresAt: Date }
  /** The user asked within 10 min: no new code; `remind` once per request (a polite "still pending"), then silence. */
  | { kind: 'rate-limited'; requestId: string; remind: boolean }
  /** 3 requests of other users are pending on this platform. */
  | { kind: 'full' }
  /** 5 failed approvals locked this platform's pairing. */
  | { kind: 'locked'; until: Date };

async function lockedUntil(sql: Sql, agentId: string, platform: string, now: Date): Promise<Date | undefined> {
  const { rows } = await sql.query<{ lockedUntil: Date | null }>(
    `SELECT locked_until AS "lockedUntil" FROM pairing_locks WHERE agent_id = $1 AND platform = $2`, [agentId, platform]);
  const until = rows[0]?.lockedUntil;
  return until && until > now ? until : undefined;
}

/** Records a pairing request (call inside a transaction: the code's message is admitted in the same one). */
export async function requestPairing(sql: Sql, input: PairingRequestInput): Promise<PairingAsk> {
  const { agentId, platform, user, now } = input;
  await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`pairing:${agentId}:${platform}`]);
  const until = await lockedUntil(sql, agentId, platform, now);
  if (until) return { kind: 'locked', until };
  const recent = await sql.query<{ id: string; state: string; reminded: boolean }>(
    `SELECT id, state, reminded FROM pairing_requests
     WHERE agent_id = $1 AND platform = $2 AND platform_user_id = $3 AND created_at > $4 AND expires_at > $5
     ORDER BY created_at DESC LIMIT 1`,
    [agentId, platform, user.id, new Date(now.getTime() - PAIRING_LIMITS.requestIntervalMs), now]);
  const last = recent.rows[0];
  if (last) {
    const remind = last.state === 'pending' && !last.reminded;
    if (remind) await sql.query(`UPDATE pairing_requests SET reminded = true WHERE id = $1`, [last.id]);
    return { kind: 'rate-limited', requestId: last.id, remind };
  }
  const pending = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pairing_requests WHERE agent_id = $1 AND platform = $2 AND state = 'pending' AND expires_at > $3 AND platform_user_id <> $4`,
    [agentId, platform, now, user.id]);
  if (pending.rows[0]!.n >= PAIRING_LIMITS.maxPendingPerPlatform) return { kind: 'full' };
  // An older request of this user (over 10 min old) is replaced: one code per person at a time.
  await sql.query(`UPDATE pairing_requests SET state = 'superseded' WHERE agent_id = $1 AND platform = $2 AND platform_user_id = $3 AND state = 'pending'`, [agentId, platform, user.id]);
  const code = pairingCode();
  const expiresAt = later(now, PAIRING_LIMITS.expiryMs);
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO pairing_requests (id, agent_id, platform, platform_user_id, display_name, code_sha256, reply_target, created_at, expires_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6::jsonb, $7, $8) RETURNING id`,
    [agentId, platform, user.id, user.name ?? null, codeHash(agentId, code), JSON.stringify(input.replyTarget ?? null), now, expiresAt]);
  return { kind: 'code', requestId: rows[0]!.id, code, expiresAt };
}

/** Whether an owner approved `userId` on `platform` for this agent. */
export async function isPaired(sql: Sql, agentId: string, platform: string, userId: string): Promise<boolean> {
  const { rows } = await sql.query(`SELECT 1 FROM paired_users WHERE agent_id = $1 AND platform = $2 AND platform_user_id = $3`, [agentId, platform, userId]);
  return rows.length > 0;
}

export interface PendingPairing {
  id: string;
  platform: string;
  userId: string;
  displayName: string | null;
  createdAt: Date;
  expiresAt: Date;
  replyTarget: unknown;
}

export interface PairedUserRow { platform: string; userId: string; displayName: string | null; approvedBy: string; approvedAt: Date }

/** Pending, unexpired requests (oldest first) and the approved users of an agent. Codes are not stored, so not listed. */
export async function listPairings(sql: Sql, agentId: string, now: Date): Promise<{ pending: PendingPairing[]; paired: PairedUserRow[] }> {
  const pending = await sql.query<PendingPairing>(
    `SELECT id, platform, platform_user_id AS "userId", display_name AS "displayName", created_at AS "createdAt", expires_at AS "expiresAt", reply_target AS "replyTarget"
     FROM pairing_requests WHERE agent_id = $1 AND state = 'pending' AND expires_at > $2 ORDER BY created_at`, [agentId, now]);
  const paired = await sql.query<PairedUserRow>(
    `SELECT platform, platform_user_id AS "userId", display_name AS "displayName", approved_by AS "approvedBy", approved_at AS "approvedAt"
     FROM paired_users WHERE agent_id = $1 ORDER BY approved_at`, [agentId]);
  return { pending: pending.rows, paired: paired.rows };
}

export interface PairingDecisionInput {
  agentId: string;
  code: string;
  /** The platform the code is for; absent: any of `platforms`. A miss counts against it (or each of them). */
  platform?: string;
  /** The agent's platforms with pairing on (where a miss is counted when `platform` is absent). */
  platforms: readonly string[];
  decision: 'approve' | 'deny';
  /** Who decided, recorded: `cli:<login>`, `admin-api[:by]`, `slack:U…`. */
  by: string;
  now: Date;
}

export type PairingDecision =
  | { ok: true; request: PendingPairing }
  /** not-found: no pending, unexpired request has this code (a failed attempt, counted); locked: pairing is locked until `until`. */
  | { ok: false; reason: 'not-found' | 'locked'; until?: Date };

/** Counts one failed attempt on `platform`; the 5th within an hour locks its pairing for 1 h. Returns the lock's end when it locked. */
async function countFailure(sql: Sql, agentId: string, platform: string, now: Date): Promise<Date | undefined> {
  const windowStart = new Date(now.getTime() - PAIRING_LIMITS.lockMs);
  const { rows } = await sql.query<{ failures: number }>(
    `INSERT INTO pairing_locks AS l (agent_id, platform, failures, window_started_at) VALUES ($1, $2, 1, $3)
     ON CONFLICT (agent_id, platform) DO UPDATE SET
       failures = CASE WHEN l.window_started_at < $4 THEN 1 ELSE l.failures + 1 END,
       window_started_at = CASE WHEN l.window_started_at < $4 THEN $3 ELSE l.window_started_at END
     RETURNING failures`, [agentId, platform, now, windowStart]);
  if (rows[0]!.failures < PAIRING_LIMITS.maxFailures) return undefined;
  const until = later(now, PAIRING_LIMITS.lockMs);
  await sql.query(`UPDATE pairing_locks SET failures = 0, locked_until = $3, window_started_at = $4 WHERE agent_id = $1 AND platform = $2`, [agentId, platform, until, now]);
  return until;
}

async function anyLock(sql: Sql, agentId: string, platforms: readonly string[], now: Date): Promise<Date | undefined> {
  for (const p of platforms) {
    const until = await lockedUntil(sql, agentId, p, now);
    if (until) return until;
  }
  return undefined;
}

/** Approves or denies the pending request with `code`. Approving pairs the user (persisted). */
export async function decidePairing(db: Pick<Db, 'tx'>, input: PairingDecisionInput): Promise<PairingDecision> {
  const { agentId, now } = input;
  return db.tx(async (sql) => {
    await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`pairing-decide:${agentId}`]);
    const scope = input.platform ? [input.platform] : input.platforms;
    const { rows } = await sql.query<PendingPairing>(
      `SELECT id, platform, platform_user_id AS "userId", display_name AS "displayName", created_at AS "createdAt", expires_at AS "expiresAt", reply_target AS "replyTarget"
       FROM pairing_requests WHERE agent_id = $1 AND code_sha256 = $2 AND state = 'pending' AND expires_at > $3 AND ($4::text IS NULL OR platform = $4)
       ORDER BY created_at DESC LIMIT 1`, [agentId, codeHash(agentId, input.code), now, input.platform ?? null]);
    const request = rows[0];
    const locked = await anyLock(sql, agentId, request ? [request.platform] : scope, now);
    if (locked) return { ok: false, reason: 'locked', until: locked };
    if (!request) {
      let until: Date | undefined;
      for (const p of scope) until = (await countFailure(sql, agentId, p, now)) ?? until;
      return { ok: false, reason: until ? 'locked' : 'not-found', ...(until ? { until } : {}) };
    }
    await sql.query(`UPDATE pairing_requests SET state = $2, decided_by = $3, decided_at = $4 WHERE id = $1`,
      [request.id, input.decision === 'approve' ? 'approved' : 'denied', input.by, now]);
    if (input.decision === 'approve') {
      await sql.query(
        `INSERT INTO paired_users (agent_id, platform, platform_user_id, display_name, approved_by, approved_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (agent_id, platform, platform_user_id) DO UPDATE SET approved_by = EXCLUDED.approved_by, approved_at = EXCLUDED.approved_at`,
        [agentId, request.platform, request.userId, request.displayName, input.by, now]);
    }
    return { ok: true, request };
  });
}

/** Removes an approved user (they go back to the pairing flow). True when one was paired. */
export async function revokePairing(sql: Sql, agentId: string, platform: string, userId: string): Promise<boolean> {
  const { rowCount } = await sql.query(`DELETE FROM paired_users WHERE agent_id = $1 AND platform = $2 AND platform_user_id = $3`, [agentId, platform, userId]);
  return (rowCount ?? 0) > 0;
}
