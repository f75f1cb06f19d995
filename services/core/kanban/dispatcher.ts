// The Kanban dispatcher's tick (Hermes' order): observe started runs → release stale claims →
// settle runs whose turn ended → crashed workers (instance id, never a PID) → stale heartbeats →
// max runtime → promote tasks whose dependencies are done → claim ready tasks by compare-and-swap
// and start each assignee's turn as a queued admission. Every time comes from the caller's clock.
// Exactly one dispatcher runs across replicas (dispatcher-loop.ts: runAsLeader), but a tick is
// also safe to race: each claim and each run end is a compare-and-swap.
import type { Redis } from 'ioredis';
import type { Db, Sql } from '../db.js';
import type { Logger } from '../logger.js';
import { enqueueTurn, type Queues } from '../queues.js';
import { admitIn } from '../ledger/admissions.js';
import { ownerDead, type DeathRule } from '../ledger/instances.js';
import { publishSignal, recordSignal, type SessionSignal } from '../ledger/signals.js';
import { failRun, type BreakerPolicy } from './lifecycle.js';
import { taskPrompt } from './prompt.js';
import { addEvent } from './tasks.js';
import type { RunOutcome } from './types.js';
import { randomUUID } from 'node:crypto';

export interface DispatchPolicy extends BreakerPolicy {
  /** A claimed run whose turn has not started by then is reclaimed. @defaultValue 900 */
  claimTtlSeconds: number;
  /** A started run without a heartbeat this long is stale. @defaultValue 1800 */
  staleSeconds: number;
  /** A run longer than this (a task's max_runtime_seconds wins) is timed out. @defaultValue 14400 */
  maxRuntimeSeconds: number;
  /** Tasks claimed per tick. @defaultValue 64 */
  claimsPerTick: number;
}

export interface TickDeps {
  db: Db;
  /** Absent: admissions are only recorded (the sweeper enqueues stranded ones). */
  queues?: Queues;
  /** Absent: stop signals are recorded, not announced (the turn reads them at its next step). */
  redis?: Redis;
  queuePrefix: string;
  rule: DeathRule;
  policy: DispatchPolicy;
  log: Logger;
}

export interface TickReport {
  started: number;
  reclaimed: number;
  settled: number;
  crashed: number;
  stale: number;
  timedOut: number;
  promoted: number;
  claimed: string[];
  /** Milliseconds per step. */
  ms: Record<string, number>;
}

const LIMIT = 500;

/** Claimed runs whose admission a worker took are running now. */
async function observeStarts(sql: Sql, now: Date): Promise<number> {
  const { rowCount } = await sql.query(
    `UPDATE kanban_runs r SET status = 'running', started_at = $1, heartbeat_at = $1 FROM admissions a
     WHERE r.status = 'claimed' AND a.id = r.admission_id AND a.state <> 'queued'`, [now]);
  return rowCount ?? 0;
}

interface EndingRun { id: string; outcome: RunOutcome; error: string; infrastructure?: boolean; admissionId?: string | null; sessionId?: string | null; stop?: boolean }

/** Ends each listed run in its own transaction (one failure never stops the others). */
async function endEach(deps: TickDeps, runs: EndingRun[], now: Date): Promise<number> {
  let n = 0;
  const signals: SessionSignal[] = [];
  for (const r of runs) {
    const ended = await deps.db.tx(async (sql) => {
      if (r.outcome === 'reclaimed' && r.admissionId) {
        // The turn never started: drop its admission (only while still queued, a compare-and-swap).
        const dropped = await sql.query(`UPDATE admissions SET state = 'terminal', outcome = 'discarded', finished_at = now(), error = 'kanban claim reclaimed', updated_at = now() WHERE id = $1 AND state = 'queued'`, [r.admissionId]);
        if (dropped.rowCount !== 1) return false;
      }
      const to = await failRun(sql, r.id, { outcome: r.outcome, error: r.error, infrastructure: r.infrastructure ?? false }, now, deps.policy);
      if (to && r.stop && r.admissionId && r.sessionId) signals.push(await recordSignal(sql, { sessionId: r.sessionId, admissionId: r.admissionId, kind: 'stop', text: r.error }));
      return to !== undefined;
    });
    if (ended) n++;
  }
  for (const s of signals) {
    if (deps.redis) await publishSignal(deps.redis, deps.queuePrefix, s).catch((err: unknown) => deps.log.warn({ err, session: s.sessionId }, 'Kanban stop signal publish failed'));
  }
  return n;
}

async function reclaimStaleClaims(deps: TickDeps, now: Date): Promise<number> {
  const { rows } = await deps.db.pool.query<{ id: string; admissionId: string | null }>(
    `SELECT r.id, r.admission_id AS "admissionId" FROM kanban_runs r JOIN kanban_tasks t ON t.id = r.task_id AND t.current_run_id = r.id
     WHERE r.status = 'claimed' AND t.claim_expires_at < $1 LIMIT ${LIMIT}`, [now]);
  return endEach(deps, rows.map((r) => ({ ...r, outcome: 'reclaimed' as const, error: `claim not started within ${deps.policy.claimTtlSeconds} s` })), now);
}

const endedTurnOutcome = (state: string, outcome: string | null): RunOutcome => {
  if (state === 'unknown' || outcome === 'interrupted') return 'crashed';
  if (outcome === 'failed') return 'failed';
  if (outcome === 'discarded') return 'reclaimed';
  return 'protocol_violation';
};

/**
 * A failed turn whose reason is the platform's, not the task's — the model provider rate limited,
 * overloaded or unreachable (Hermes: exit 75) — is an infrastructure failure: not counted.
 */
export const INFRASTRUCTURE_ERROR = /\b(429|503|rate[ _-]?limit(ed)?|overloaded|ECONNREFUSED|ETIMEDOUT|ECONNRESET)\b/i;

/** Runs whose turn is over without kanban_complete / kanban_block. */
async function settleEndedTurns(deps: TickDeps, now: Date): Promise<number> {
  const { rows } = await deps.db.pool.query<{ id: string; state: string; outcome: string | null; error: string | null }>(
    `SELECT r.id, a.state, a.outcome, a.error FROM kanban_runs r JOIN admissions a ON a.id = r.admission_id
     WHERE r.status <> 'ended' AND a.state IN ('terminal', 'unknown') LIMIT ${LIMIT}`);
  return endEach(deps, rows.map((r) => {
    const outcome = endedTurnOutcome(r.state, r.outcome);
    const error = outcome === 'protocol_violation' ? 'the turn ended without kanban_complete or kanban_block' : r.error ?? `turn ${r.outcome ?? r.state}`;
    return { id: r.id, outcome, error, infrastructure: outcome === 'failed' && INFRASTRUCTURE_ERROR.test(error) };
  }), now);
}

/** Started turns whose worker instance is dead (stopped, or heartbeat older than the instance TTL). */
async function detectCrashedWorkers(deps: TickDeps, now: Date): Promise<number> {
  const { rows } = await deps.db.pool.query<{ id: string; owner: string }>(
    `SELECT r.id, a.owner_instance_id AS owner FROM kanban_runs r JOIN admissions a ON a.id = r.admission_id
     WHERE r.status = 'running' AND a.state = 'started' AND ${ownerDead('a.owner_instance_id', '$1', '$2')} LIMIT ${LIMIT}`,
    [deps.rule.instanceTtlSeconds, deps.rule.steady]);
  return endEach(deps, rows.map((r) => ({ id: r.id, outcome: 'crashed' as const, error: `worker instance ${r.owner} is gone` })), now);
}

async function stopLongRuns(deps: TickDeps, now: Date, which: 'stale' | 'timed_out'): Promise<number> {
  const cond = which === 'stale'
    ? `r.heartbeat_at < $1::timestamptz - make_interval(secs => $2)`
    : `r.started_at < $1::timestamptz - make_interval(secs => COALESCE(t.max_runtime_seconds, $2))`;
  const { rows } = await deps.db.pool.query<{ id: string; admissionId: string; sessionId: string }>(
    `SELECT r.id, r.admission_id AS "admissionId", a.session_id AS "sessionId" FROM kanban_runs r JOIN kanban_tasks t ON t.id = r.task_id JOIN admissions a ON a.id = r.admission_id
     WHERE r.status = 'running' AND ${cond} LIMIT ${LIMIT}`,
    [now, which === 'stale' ? deps.policy.staleSeconds : deps.policy.maxRuntimeSeconds]);
  const error = which === 'stale' ? `no heartbeat for ${deps.policy.staleSeconds} s` : 'ran longer than its maximum runtime';
  return endEach(deps, rows.map((r) => ({ ...r, outcome: which, error, stop: true })), now);
}

/** todo (and scheduled, once due) → ready when every parent is done. */
export async function promoteReady(sql: Sql, now: Date): Promise<number> {
  const { rowCount } = await sql.query(
    `WITH up AS (
       UPDATE kanban_tasks t SET status = 'ready', updated_at = $1
       WHERE t.status IN ('todo', 'scheduled') AND (t.scheduled_at IS NULL OR t.scheduled_at <= $1)
         AND NOT EXISTS (SELECT 1 FROM kanban_links l JOIN kanban_tasks p ON p.id = l.parent_id WHERE l.child_id = t.id AND p.status <> 'done')
       RETURNING t.id)
     INSERT INTO kanban_events (task_id, kind, created_at) SELECT id, 'promoted', $1 FROM up`, [now]);
  return rowCount ?? 0;
}

/** One ready task: compare-and-swap ready → running, a run row, and the assignee's queued admission, in one transaction. */
async function claimTask(deps: TickDeps, taskId: string, now: Date): Promise<string | undefined> {
  const runId = randomUUID();
  return deps.db.tx(async (sql) => {
    const { rows } = await sql.query<{ boardId: string; agentId: string }>(
      `UPDATE kanban_tasks t SET status = 'running', claim_lock = $2, current_run_id = $2, claim_expires_at = $3::timestamptz + make_interval(secs => $4), updated_at = $3
       WHERE t.id = $1 AND t.status = 'ready' AND t.claim_lock IS NULL AND t.assignee_agent_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM kanban_links l JOIN kanban_tasks p ON p.id = l.parent_id WHERE l.child_id = t.id AND p.status <> 'done')
       RETURNING t.board_id AS "boardId", t.assignee_agent_id AS "agentId"`,
      [taskId, runId, now, deps.policy.claimTtlSeconds]);
    const claimed = rows[0];
    if (!claimed) return undefined; // another dispatcher (or a person) got there first
    const { rows: [prior] } = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM kanban_runs WHERE task_id = $1`, [taskId]);
    await sql.query(`INSERT INTO kanban_runs (id, task_id, agent_id, claimed_at, heartbeat_at) VALUES ($1, $2, $3, $4, $4)`, [runId, taskId, claimed.agentId, now]);
    const admitted = await admitIn(sql, {
      agentId: claimed.agentId, platform: 'kanban', sessionKey: `kanban:${taskId}:${runId}`, eventId: `kanban-run:${runId}`,
      user: { platformUserId: `board:${claimed.boardId}` }, content: await taskPrompt(sql, taskId, (prior?.n ?? 0) + 1),
      replyTarget: { kind: 'kanban', taskId, runId },
    });
    await sql.query(`UPDATE kanban_runs SET admission_id = $2 WHERE id = $1`, [runId, admitted.admissionId]);
    await addEvent(sql, { taskId, runId, kind: 'claimed', data: { agentId: claimed.agentId, admissionId: admitted.admissionId } }, now);
    return admitted.admissionId;
  });
}

async function claimReady(deps: TickDeps, now: Date): Promise<string[]> {
  const { rows } = await deps.db.pool.query<{ id: string }>(
    `SELECT t.id FROM kanban_tasks t JOIN agents a ON a.id = t.assignee_agent_id
     WHERE t.status = 'ready' AND a.stopped_at IS NULL AND a.current_revision_id IS NOT NULL
     ORDER BY t.priority DESC, t.created_at LIMIT $1`, [deps.policy.claimsPerTick]);
  const claimed: string[] = [];
  for (const { id } of rows) {
    const admissionId = await claimTask(deps, id, now);
    if (!admissionId) continue;
    claimed.push(id);
    // A lost wake-up is found by the sweeper (a stranded queued admission is enqueued again).
    if (deps.queues) await enqueueTurn(deps.queues, { admissionId }).catch((err: unknown) => deps.log.warn({ err, task: id }, 'Kanban turn enqueue failed; the sweeper will start it'));
  }
  return claimed;
}

/** One dispatcher tick at `now`; `ms` holds each step's duration (the benchmark prints them). */
export async function dispatchTick(deps: TickDeps, now: Date): Promise<TickReport> {
  const ms: Record<string, number> = {};
  const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    try { return await fn(); } finally { ms[name] = performance.now() - t; }
  };
  const started = await step('observe', () => observeStarts(deps.db.pool, now));
  const reclaimed = await step('reclaim', () => reclaimStaleClaims(deps, now));
  const settled = await step('settle', () => settleEndedTurns(deps, now));
  const crashed = await step('crashed', () => detectCrashedWorkers(deps, now));
  const stale = await step('stale', () => stopLongRuns(deps, now, 'stale'));
  const timedOut = await step('runtime', () => stopLongRuns(deps, now, 'timed_out'));
  const promoted = await step('promote', () => promoteReady(deps.db.pool, now));
  const claimed = await step('claim', () => claimReady(deps, now));
  return { started, reclaimed, settled, crashed, stale, timedOut, promoted, claimed, ms };
}
