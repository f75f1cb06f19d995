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
}

export async function getAdmissionStatus(sql: Sql, id: string): Promise<AdmissionStatus | undefined> {
  const { rows } = await sql.query<AdmissionStatus>(
    `SELECT a.id, a.state, a.outcome, a.agent_id AS "agentId", a.session_id AS "sessionId", a.platform,
            u.platform_user_id AS "callerId", a.created_at AS "createdAt", a.started_at AS "startedAt", a.finished_at AS "finishedAt"
     FROM admissions a LEFT JOIN users u ON u.id = a.user_id
     WHERE a.id = $1`,
    [id],
  );
  return rows[0];
}

/** State and outcome of each of `ids` that exists, in one statement (one poll for every follower of a process). */
export async function getAdmissionProgress(sql: Sql, ids: readonly string[]): Promise<AdmissionProgress[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql.query<AdmissionProgress>(
    `SELECT id, state, outcome FROM admissions WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return rows;
}

/**
 * The admission that continues `id` after a shutdown cut it (a `resume`, turns.ts cutTurn), if
 * any: a caller waiting for `id`'s reply waits for that one's instead.
 */
export async function continuationOf(sql: Sql, id: string): Promise<string | undefined> {
  const { rows } = await sql.query<{ id: string }>(`SELECT id FROM admissions WHERE resume_of = $1 AND intent = 'resume' LIMIT 1`, [id]);
  return rows[0]?.id;
}

/** What a caller waiting for a settled turn needs, in one read: its reply obligation and the final message's token usage. */
export async function readTurnEnd(sql: Sql, admissionId: string): Promise<{ reply: Obligation | undefined; usage: TurnUsage }> {
  const { rows } = await sql.query<Obligation & { id: string | null; finalUsage: { inputTokens?: number; outputTokens?: number } | null }>(
    `SELECT d.*, (SELECT usage FROM messages WHERE admission_id = $1 AND role = 'assistant' ORDER BY seq DESC LIMIT 1) AS "finalUsage"
     FROM (SELECT 1) one LEFT JOIN (SELECT ${obligationColumns} FROM delivery_obligations WHERE admission_id = $1) d ON true`,
    [admissionId],
  );
  const { finalUsage, ...ob } = rows[0] ?? { finalUsage: null, id: null };
  return { reply: ob.id ? (ob as Obligation) : undefined, usage: { inputTokens: finalUsage?.inputTokens ?? 0, outputTokens: finalUsage?.outputTokens ?? 0 } };
}
