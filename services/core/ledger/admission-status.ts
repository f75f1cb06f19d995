// Narrow reads of admissions for those who follow them (the gateway's waiters, status lookups):
// state, outcome and times, never the content or the caller history (up to ~1 MiB each), and the
// identity that admitted it, so a caller can be told apart from other callers of the agent.
import type { Sql } from '../db.js';
import type { AdmissionOutcome, AdmissionState } from './admissions.js';
import { obligationColumns, type Obligation } from './deliveries.js';
import type { TurnUsage } from './messages.js';

export interface AdmissionProgress {
  id: string;
  state: AdmissionState;
  outcome: AdmissionOutcome | null;
}

export interface AdmissionStatus extends AdmissionProgress {
  agentId: string;
  sessionId: string;
  platform: string;
  /** `users.platform_user_id` of the admitting user (on the API platform: the caller identity). */
  callerId: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The `resume` admission that continues this one (cut by a shutdown or its worker's fence), if any. */
  continuedBy: string | null;
}

/** The id of the `resume` admission that continues admission column/parameter `a`. */
const resumeOf = (a: string) => `SELECT r.id FROM admissions r WHERE r.resume_of = ${a} AND r.intent = 'resume' LIMIT 1`;

/** Resumes are followed at most this many hops (a session is suspended after 3 cuts in a row: never reached, only a bound). */
const MAX_RESUME_HOPS = 8;

/**
 * The admission at column/parameter `a` and, hop by hop, the `resume` admissions that continue it
 * after shutdown cuts (each one is the previous one's `continuedBy`): rows (id, hop), hop 0 being
 * `a`. The highest hop is where the turn goes on or ended — a follower that outlives cuts (the cron
 * ledger) reads that one, not `a`. A cut and its resume are written in one transaction, so no
 * reader sees `a` interrupted without the resume that continues it.
 */
export const resumeChain = (a: string) => `WITH RECURSIVE chain(id, hop) AS (
    SELECT ${a}::uuid, 0
    UNION ALL
    SELECT n.id, c.hop + 1 FROM chain c JOIN admissions p ON p.id = c.id AND p.outcome = 'interrupted'
      CROSS JOIN LATERAL (${resumeOf('p.id')}) n
    WHERE c.hop < ${MAX_RESUME_HOPS})
  SELECT id, hop FROM chain`;

export async function getAdmissionStatus(sql: Sql, id: string): Promise<AdmissionStatus | undefined> {
  const { rows } = await sql.query<AdmissionStatus>(
    `SELECT a.id, a.state, a.outcome, a.agent_id AS "agentId", a.session_id AS "sessionId", a.platform,
            u.platform_user_id AS "callerId", a.created_at AS "createdAt", a.started_at AS "startedAt", a.finished_at AS "finishedAt",
            CASE WHEN a.outcome = 'interrupted' THEN (${resumeOf('a.id')}) END AS "continuedBy"
     FROM admissions a LEFT JOIN users u ON u.id = a.user_id
     WHERE a.id = $1`,
    [id],
  );
  return rows[0];
}

/** A followed admission's progress; once settled, with what its waiters answer (read in the same statement). */
export interface FollowedProgress extends AdmissionProgress {
  end?: TurnEndRead;
}

export interface TurnEndRead {
  reply: Obligation | undefined;
  usage: TurnUsage;
}

type EndColumns = { replyRow: Obligation | null; finalUsage: { inputTokens?: number; outputTokens?: number } | null };

const toEnd = (r: EndColumns): TurnEndRead => ({
  reply: r.replyRow ? { ...r.replyRow, createdAt: new Date(r.replyRow.createdAt) } : undefined, usage: { inputTokens: r.finalUsage?.inputTokens ?? 0, outputTokens: r.finalUsage?.outputTokens ?? 0 },
});

/** The reply obligation (as JSON, in Obligation's shape) and the final usage of admission column `a`. */
const endColumns = (a: string) => `
  (SELECT row_to_json(d) FROM (SELECT ${obligationColumns} FROM delivery_obligations WHERE admission_id = ${a} AND call_key = '') d) AS "replyRow",
  (SELECT m.usage FROM messages m WHERE m.admission_id = ${a} AND m.role = 'assistant' ORDER BY m.seq DESC LIMIT 1) AS "finalUsage"`;

/**
 * State and outcome of each of `ids` that exists — and, for those that settled, their reply and
 * usage — in one statement (one poll for every follower of a process, and no second read when a
 * turn ends).
 */
export async function getAdmissionProgress(sql: Sql, ids: readonly string[]): Promise<FollowedProgress[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql.query<AdmissionProgress & { settled: boolean } & EndColumns>({
    name: 'hermes_admission_progress', // prepared once per connection: no parse and plan per turn
    text: `SELECT a.id, a.state, a.outcome, s.settled, e."replyRow", e."finalUsage"
     FROM admissions a CROSS JOIN LATERAL (SELECT a.state IN ('terminal', 'unknown') AS settled) s
     LEFT JOIN LATERAL (SELECT ${endColumns('a.id')}) e ON s.settled
     WHERE a.id = ANY($1::uuid[])`,
    values: [ids],
  });
  return rows.map(({ settled, replyRow, finalUsage, ...p }) => (settled ? { ...p, end: toEnd({ replyRow, finalUsage }) } : p));
}

/**
 * The admission that continues `id` after a shutdown cut it (a `resume`, turns.ts cutTurn), if
 * any: a caller waiting for `id`'s reply waits for that one's instead.
 */
export async function continuationOf(sql: Sql, id: string): Promise<string | undefined> {
  const { rows } = await sql.query<{ id: string }>(resumeOf('$1'), [id]);
  return rows[0]?.id;
}

/** What a caller waiting for a settled turn needs, in one read: its reply obligation and the final message's token usage. */
export async function readTurnEnd(sql: Sql, admissionId: string): Promise<TurnEndRead> {
  const { rows } = await sql.query<EndColumns>({ name: 'hermes_turn_end', text: `SELECT ${endColumns('$1::uuid')}`, values: [admissionId] });
  return toEnd(rows[0] ?? { replyRow: null, finalUsage: null });
}
