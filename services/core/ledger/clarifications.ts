// Durable clarify questions (issue 14). The worker's clarify tool parks its question here and, in
// the same transaction, records the question as a delivery obligation to the turn's chat; then it
// polls the row. The user's next plain message in the session is the answer: the gateway records
// it at admission (only the asking turn's user may answer), and the waiting turn takes it
// (`consumed_at`). Deadlines are Postgres' clock, so a restarted waiter sees the same expiry. A
// turn cut by a shutdown and resumed elsewhere takes its open question over (adoptClarification).
import type { Db, Sql } from '../db.js';
import { pgJson, pgText } from './pg-text.js';
import { recordCallObligation } from './deliveries.js';

export type ClarificationStatus = 'pending' | 'answered' | 'expired' | 'cancelled' | 'abandoned';

export interface Clarification {
  id: string;
  sessionId: string;
  admissionId: string;
  question: string;
  choices: string[] | null;
  status: ClarificationStatus;
  answer: string | null;
  expiresAt: string;
  /** Past its deadline (Postgres' clock). */
  expired: boolean;
  consumed: boolean;
}

const COLUMNS = `id, session_id AS "sessionId", admission_id AS "admissionId", question, choices, status, answer,
  to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "expiresAt", expires_at <= now() AS expired, consumed_at IS NOT NULL AS consumed`;

/** What the user reads: the question, its numbered choices, and how to answer. */
export function clarifyQuestionText(c: Pick<Clarification, 'question' | 'choices'>): string {
  const choices = c.choices?.length ? `\n${c.choices.map((x, i) => `${i + 1}. ${x}`).join('\n')}\n\nReply with a number or in your own words.` : '\n\nReply with your answer.';
  return `❓ ${c.question}${choices}`;
}

/**
 * Parks a question for the admission's turn and records it as an obligation to the turn's chat
 * (platform and reply target of the admission; `api` callers read it as delivered). Who may answer
 * is that turn's user.
 */
export async function parkClarification(db: Db, p: { admissionId: string; question: string; choices?: string[]; timeoutSeconds: number }): Promise<{ clarification: Clarification; obligationId: string; deliveryPending: boolean }> {
  return db.tx(async (sql) => {
    const { rows } = await sql.query<Clarification & { platform: string; target: unknown }>(
      `WITH c AS (
         INSERT INTO clarifications (id, session_id, admission_id, user_id, question, choices, expires_at)
         SELECT gen_random_uuid(), a.session_id, a.id, a.user_id, $2, $3, now() + make_interval(secs => $4) FROM admissions a WHERE a.id = $1
         RETURNING *)
       SELECT ${COLUMNS}, (SELECT platform FROM admissions WHERE id = $1) AS platform, (SELECT reply_target FROM admissions WHERE id = $1) AS target FROM c`,
      [p.admissionId, pgText(p.question), pgJson(p.choices?.length ? p.choices : null), p.timeoutSeconds],
    );
    const row = rows[0];
    if (!row) throw new Error(`admission ${p.admissionId} does not exist`);
    const { platform, target, ...clarification } = row;
    const ob = await recordCallObligation(sql, { admissionId: p.admissionId, callKey: `clarify:${clarification.id}`, platform, target, content: clarifyQuestionText(clarification) });
    return { clarification, obligationId: ob.id, deliveryPending: ob.pending };
  });
}

export async function readClarification(sql: Sql, id: string): Promise<Clarification | undefined> {
  const { rows } = await sql.query<Clarification>(`SELECT ${COLUMNS} FROM clarifications WHERE id = $1`, [id]);
  return rows[0];
}

/** The question admission `admissionId`'s turn waits on (pending, not past its deadline), if any. */
export async function pendingClarificationOf(sql: Sql, admissionId: string): Promise<Clarification | undefined> {
  const { rows } = await sql.query<Clarification>(
    `SELECT ${COLUMNS} FROM clarifications WHERE admission_id = $1 AND status = 'pending' AND expires_at > now() ORDER BY created_at DESC LIMIT 1`, [admissionId]);
  return rows[0];
}

/** The event a message-API client gets for question `c` (SSE `clarify.pending` / `clarify.resolved`, the admission's `clarify`). */
export const clarifyEventOf = (c: Pick<Clarification, 'id' | 'status' | 'question' | 'choices' | 'expiresAt'>) =>
  ({ id: c.id, status: c.status, question: c.question, choices: c.choices, expiresAt: c.expiresAt, message: clarifyQuestionText(c) });

/** Ends a still-pending question as `status` (expired only past its deadline); the row as it is now. */
export async function closeClarification(sql: Sql, id: string, status: 'expired' | 'cancelled' | 'abandoned'): Promise<Clarification | undefined> {
  await sql.query(
    `UPDATE clarifications SET status = $2 WHERE id = $1 AND status = 'pending' AND ($2 <> 'expired' OR expires_at <= now())`,
    [id, status],
  );
  return readClarification(sql, id);
}

/** The waiting turn takes the answer; false when it was taken already (or there is none). */
export async function consumeClarification(sql: Sql, id: string): Promise<boolean> {
  const { rowCount } = await sql.query(`UPDATE clarifications SET consumed_at = now() WHERE id = $1 AND consumed_at IS NULL AND status = 'answered'`, [id]);
  return (rowCount ?? 0) > 0;
}

/**
 * The user's plain message `answeringAdmissionId` answers the session's oldest pending, unexpired
 * question whose user is that admission's user. Undefined when nothing of theirs waits (the message
 * is then an ordinary message).
 */
export async function answerClarification(sql: Sql, answeringAdmissionId: string, answer: string): Promise<Clarification | undefined> {
  const { rows } = await sql.query<Clarification>(
    `WITH me AS (SELECT session_id, user_id FROM admissions WHERE id = $1),
     target AS (
       SELECT c.id FROM clarifications c, me
       WHERE c.session_id = me.session_id AND c.user_id IS NOT DISTINCT FROM me.user_id AND c.status = 'pending' AND c.expires_at > now()
       ORDER BY c.created_at LIMIT 1 FOR UPDATE OF c SKIP LOCKED)
     UPDATE clarifications SET status = 'answered', answer = $2, answered_by_admission = $1, answered_at = now()
     WHERE id = (SELECT id FROM target) AND status = 'pending'
     RETURNING ${COLUMNS}`,
    [answeringAdmissionId, pgText(answer.slice(0, 20_000))],
  );
  return rows[0];
}

/** The question admission `admissionId` (a plain message) answered, if any. */
export async function clarificationAnsweredBy(sql: Sql, admissionId: string): Promise<Clarification | undefined> {
  const { rows } = await sql.query<Clarification>(`SELECT ${COLUMNS} FROM clarifications WHERE answered_by_admission = $1`, [admissionId]);
  return rows[0];
}

/**
 * A turn resumed after a shutdown cut (`resumeOf` = the cut turn) takes over that turn's open
 * question — still pending, or answered and not taken — so the wait goes on where it stopped.
 */
export async function adoptClarification(sql: Sql, admissionId: string, resumeOf: string): Promise<Clarification | undefined> {
  const { rows } = await sql.query<Clarification>(
    `UPDATE clarifications SET admission_id = $1
     WHERE id = (SELECT id FROM clarifications WHERE admission_id = $2 AND consumed_at IS NULL AND status IN ('pending', 'answered') ORDER BY created_at DESC LIMIT 1)
     RETURNING ${COLUMNS}`,
    [admissionId, resumeOf],
  );
  return rows[0];
}

/** Whether admission `id` is still being worked on (started, or cut with a resume still to run). */
export async function turnStillWaits(sql: Sql, id: string): Promise<boolean> {
  const { rows } = await sql.query<{ waits: boolean }>(
    `SELECT (a.state = 'started' OR EXISTS (SELECT 1 FROM admissions r WHERE r.resume_of = a.id AND r.state IN ('queued', 'started'))) AS waits
     FROM admissions a WHERE a.id = $1`,
    [id],
  );
  return rows[0]?.waits ?? false;
}
