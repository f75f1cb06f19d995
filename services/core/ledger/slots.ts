// Max concurrent sessions per agent (Agent spec.maxConcurrentSessions): a session starts a turn
// only while fewer than that many other sessions of its agent hold a live turn lease. Starts are
// serialised per agent by a transaction-scoped advisory lock, so two workers never both take the
// last slot. A session that finds no slot keeps its admissions `queued` (never dropped): the next
// session of the agent to let its lease go wakes the oldest waiting one (nextWaitingAdmission),
// and the outbox sweeper re-enqueues stranded queued work anyway.
import type { Db, Sql } from '../db.js';
import { admissionFromRow, type Admission } from './admissions.js';
import { ownerDead, type DeathRule } from './instances.js';
import type { StartedTurn } from './turns.js';

export interface SessionSlots {
  agentId: string;
  /** The agent's maxConcurrentSessions; undefined = no limit. */
  cap: number | undefined;
}

/** The session's agent and its concurrency cap (from the agent's current revision). */
export async function sessionSlots(sql: Sql, sessionId: string): Promise<SessionSlots | undefined> {
  const { rows } = await sql.query<{ agent_id: string; cap: number | null }>(
    `SELECT s.agent_id, (r.compiled->>'maxConcurrentSessions')::int AS cap
     FROM sessions s JOIN agents a ON a.id = s.agent_id LEFT JOIN config_revisions r ON r.id = a.current_revision_id WHERE s.id = $1`,
    [sessionId],
  );
  const r = rows[0];
  return r ? { agentId: r.agent_id, cap: r.cap ?? undefined } : undefined;
}

export interface SlotStart {
  sessionId: string;
  owner: string;
  ttlSeconds: number;
  rule: DeathRule;
  slots: { agentId: string; cap: number };
}

/**
 * hermes_start_turn under the agent's cap: 'full' when `cap` other sessions of the agent run a
 * turn now (nothing changed: the admissions stay queued); otherwise as startTurn.
 */
export async function startTurnInSlot(db: Db, s: SlotStart): Promise<StartedTurn | 'full' | undefined> {
  return db.tx(async (sql) => {
    await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`hermes:slots:${s.slots.agentId}`]);
    const { rows: [busy] } = await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM session_leases sl JOIN sessions x ON x.id = sl.session_id
       WHERE x.agent_id = $1 AND sl.session_id <> $2 AND sl.owner_instance_id IS NOT NULL AND sl.expires_at > now()
         AND NOT ${ownerDead('sl.owner_instance_id', '$3', '$4')}`,
      [s.slots.agentId, s.sessionId, s.rule.instanceTtlSeconds, s.rule.steady],
    );
    if ((busy?.n ?? 0) >= s.slots.cap) return 'full';
    const { rows } = await sql.query<{ o_epoch: number; o_admission: Record<string, unknown> | null }>(
      `SELECT o_epoch, o_admission FROM hermes_start_turn($1, $2, $3, $4, $5)`,
      [s.sessionId, s.owner, s.ttlSeconds, s.rule.instanceTtlSeconds, s.rule.steady],
    );
    const r = rows[0];
    if (!r?.o_admission) return undefined;
    return { lease: { sessionId: s.sessionId, owner: s.owner, epoch: Number(r.o_epoch) }, admission: admissionFromRow(r.o_admission) };
  });
}

/** The oldest queued admission of the agent in a session nobody is running: the next to get a free slot. */
export async function nextWaitingAdmission(sql: Sql, agentId: string): Promise<Pick<Admission, 'id' | 'sessionId' | 'traceContext'> | undefined> {
  const { rows } = await sql.query<Pick<Admission, 'id' | 'sessionId' | 'traceContext'>>(
    `SELECT a.id, a.session_id AS "sessionId", a.trace_context AS "traceContext" FROM admissions a
     WHERE a.agent_id = $1 AND a.state = 'queued'
       AND NOT EXISTS (SELECT 1 FROM session_leases sl WHERE sl.session_id = a.session_id AND sl.owner_instance_id IS NOT NULL AND sl.expires_at > now())
     ORDER BY a.seq LIMIT 1`,
    [agentId],
  );
  return rows[0];
}

/** What {@link beginTurn} found: the session's agent and cap, and the turn it started (or why not). */
export interface BeganTurn {
  slots: SessionSlots;
  /** The lease and first turn; undefined when a live holder has the lease, nothing is queued, or `full`. */
  started?: StartedTurn;
  /** The agent's cap is reached by its other sessions: the admissions wait, queued. */
  full: boolean;
}

/**
 * The session's agent and cap, the lease and its first turn (under the cap when the agent has
 * one) in one statement (hermes_begin_turn): sessionSlots + startTurn / startTurnInSlot at once.
 * Undefined when the session does not exist.
 */
export async function beginTurn(db: Db, s: Omit<SlotStart, 'slots'>): Promise<BeganTurn | undefined> {
  const { rows } = await db.pool.query<{ o_epoch: string | null; o_admission: Record<string, unknown> | null; o_agent: string; o_cap: number | null; o_full: boolean }>({
    name: 'hermes_begin_turn', // prepared once per connection: no parse and plan per turn
    text: `SELECT o_epoch, o_admission, o_agent, o_cap, o_full FROM hermes_begin_turn($1, $2, $3, $4, $5)`,
    values: [s.sessionId, s.owner, s.ttlSeconds, s.rule.instanceTtlSeconds, s.rule.steady],
  });
  const r = rows[0];
  if (!r) return undefined;
  const slots = { agentId: r.o_agent, cap: r.o_cap ?? undefined };
  if (r.o_full || !r.o_admission || r.o_epoch === null) return { slots, full: r.o_full };
  return { slots, full: false, started: { lease: { sessionId: s.sessionId, owner: s.owner, epoch: Number(r.o_epoch) }, admission: admissionFromRow(r.o_admission) } };
}
