// Durable pending approvals of dangerous commands. The worker's guard parks a tool call here and
// polls it; `/approve` or `/deny`, sent as a message to the same session, is recorded by the
// gateway at admission (it gets through while the turn runs) — by the waiting turn's own user, or
// in a shared session by a designated approver (decideApproval); the waiting turn takes the
// decision (`consumed_at`). Deadlines are Postgres' clock, so a
// restarted waiter sees the same expiry; a restart never approves anything.
import type { Sql } from '../db.js';
import { pgText } from './pg-text.js';

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'cancelled' | 'abandoned';

export interface CommandApproval {
  id: string;
  sessionId: string;
  admissionId: string;
  command: string;
  reason: string;
  status: ApprovalStatus;
  note: string | null;
  expiresAt: string;
  /** Past its deadline (Postgres' clock). */
  expired: boolean;
  consumed: boolean;
}

const COLUMNS = `id, session_id AS "sessionId", admission_id AS "admissionId", command, reason, status, note,
  to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "expiresAt", expires_at <= now() AS expired, consumed_at IS NOT NULL AS consumed`;

/** Parks `command` for the admission's turn; who may decide it is that turn's user. */
export async function parkApproval(sql: Sql, p: { admissionId: string; command: string; reason: string; timeoutSeconds: number }): Promise<CommandApproval> {
  const { rows } = await sql.query<CommandApproval>(
    `INSERT INTO command_approvals (id, session_id, admission_id, user_id, command, reason, expires_at)
     SELECT gen_random_uuid(), a.session_id, a.id, a.user_id, $2, $3, now() + make_interval(secs => $4) FROM admissions a WHERE a.id = $1
     RETURNING ${COLUMNS}`,
    [p.admissionId, pgText(p.command), pgText(p.reason), p.timeoutSeconds],
  );
  if (!rows[0]) throw new Error(`admission ${p.admissionId} does not exist`);
  return rows[0];
}

export async function readApproval(sql: Sql, id: string): Promise<CommandApproval | undefined> {
  const { rows } = await sql.query<CommandApproval>(`SELECT ${COLUMNS} FROM command_approvals WHERE id = $1`, [id]);
  return rows[0];
}

/** Ends a still-pending approval as `status` (expired only past its deadline); the row as it is now. */
export async function closeApproval(sql: Sql, id: string, status: 'expired' | 'cancelled' | 'abandoned'): Promise<CommandApproval | undefined> {
  await sql.query(
    `UPDATE command_approvals SET status = $2, decided_at = now() WHERE id = $1 AND status = 'pending' AND ($2 <> 'expired' OR expires_at <= now())`,
    [id, status],
  );
  return readApproval(sql, id);
}

/** The waiting turn takes a decision; false when it was taken already (or there is none). */
export async function consumeApproval(sql: Sql, id: string): Promise<boolean> {
  const { rowCount } = await sql.query(`UPDATE command_approvals SET consumed_at = now() WHERE id = $1 AND consumed_at IS NULL AND status IN ('approved', 'denied')`, [id]);
  return (rowCount ?? 0) > 0;
}

/**
 * `/approve` or `/deny` of admission `decidingAdmissionId`: decides the session's oldest pending,
 * unexpired approval whose user is that admission's user — or, for a designated approver
 * (`anyUser`: an admin, or a person team mode's spec.access grants `approve`), whoever's it is, as
 * Hermes' approvals belong to the session (a shared thread). Undefined when nothing waits for them.
 */
export async function decideApproval(sql: Sql, d: { decidingAdmissionId: string; decision: 'approved' | 'denied'; note?: string; anyUser?: boolean }): Promise<CommandApproval | undefined> {
  const { rows } = await sql.query<CommandApproval>(
    `WITH me AS (SELECT session_id, user_id FROM admissions WHERE id = $1),
     target AS (
       SELECT c.id FROM command_approvals c, me
       WHERE c.session_id = me.session_id AND ($4 OR c.user_id IS NOT DISTINCT FROM me.user_id) AND c.status = 'pending' AND c.expires_at > now()
       ORDER BY c.created_at LIMIT 1 FOR UPDATE OF c SKIP LOCKED)
     UPDATE command_approvals SET status = $2, note = $3, decided_by_admission = $1, decided_at = now()
     WHERE id = (SELECT id FROM target) AND status = 'pending'
     RETURNING ${COLUMNS}`,
    [d.decidingAdmissionId, d.decision, d.note ? pgText(d.note) : null, d.anyUser ?? false],
  );
  return rows[0];
}

/** The approval admission `admissionId` (a `/approve` or `/deny`) decided, if any. */
export async function approvalDecidedBy(sql: Sql, admissionId: string): Promise<CommandApproval | undefined> {
  const { rows } = await sql.query<CommandApproval>(`SELECT ${COLUMNS} FROM command_approvals WHERE decided_by_admission = $1`, [admissionId]);
  return rows[0];
}

/** The admission's approvals still waiting (event streams show them to clients that join late). */
export async function pendingApprovalsOf(sql: Sql, admissionId: string): Promise<CommandApproval[]> {
  const { rows } = await sql.query<CommandApproval>(`SELECT ${COLUMNS} FROM command_approvals WHERE admission_id = $1 AND status = 'pending' AND expires_at > now() ORDER BY created_at`, [admissionId]);
  return rows;
}

/** What the user is told while a command waits (event streams; later the chat). */
export const approvalPendingMessage = (a: Pick<CommandApproval, 'command' | 'reason' | 'expiresAt'>): string =>
  `Approval needed: the agent wants to run ${JSON.stringify(a.command)} (${a.reason}). Reply /approve to run it or /deny [reason] to refuse; without an answer by ${a.expiresAt} it is refused.`;

const APPROVAL_COMMAND = /^\/(approve|deny)(?:\s+([\s\S]*))?$/i;

/** `/approve` or `/deny [note]` → the decision; anything else → undefined. */
export function parseApprovalCommand(content: string): { decision: 'approved' | 'denied'; note?: string } | undefined {
  const m = APPROVAL_COMMAND.exec(content.trim());
  if (!m) return undefined;
  const note = m[2]?.trim().slice(0, 500);
  return m[1]!.toLowerCase() === 'approve' ? { decision: 'approved' } : { decision: 'denied', ...(note ? { note } : {}) };
}
