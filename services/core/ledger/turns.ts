// Ending a turn: the final message, its delivery obligation and the admission's `terminal`
// state are one transaction, written only while the writer still holds the session lease.
import type { Db } from '../db.js';
import { holdsLease, type Lease } from './leases.js';
import { appendMessage } from './messages.js';
import type { AdmissionOutcome } from './admissions.js';

export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor(readonly admissionId: string) {
    super(`session turn lease lost: admission ${admissionId} was not finished by this worker`);
  }
}

export interface TurnResult {
  outcome: Exclude<AdmissionOutcome, 'discarded'>;
  /** Final text for the user (the answer, or what went wrong in words they can act on). */
  reply: string;
  /** For failed turns: the technical reason, kept on the admission. */
  error?: string;
  interrupted?: boolean;
  usage?: unknown;
}

export interface FinishedTurn {
  obligationId: string;
  messageId: number;
}

export async function finishTurn(db: Db, lease: Lease, admissionId: string, result: TurnResult): Promise<FinishedTurn> {
  return db.tx(async (sql) => {
    const { rows } = await sql.query<{ session_id: string; agent_id: string; platform: string; reply_target: unknown }>(
      `SELECT session_id, agent_id, platform, reply_target FROM admissions
       WHERE id = $1 AND state = 'started' AND owner_instance_id = $2 AND owner_epoch = $3
         AND ${holdsLease('session_id', '$2::uuid', '$3::bigint')}
       FOR UPDATE`,
      [admissionId, lease.owner, lease.epoch],
    );
    const adm = rows[0];
    if (!adm) throw new LeaseLostError(admissionId);
    const msg = await appendMessage(sql, adm.session_id, {
      role: 'assistant', content: result.reply, admissionId, interrupted: result.interrupted ?? false, usage: result.usage,
    });
    const ob = await sql.query<{ id: string }>(
      `INSERT INTO delivery_obligations (id, admission_id, agent_id, session_id, message_id, platform, target, content)
       VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7) RETURNING id`,
      [admissionId, adm.agent_id, adm.session_id, msg.id, adm.platform, adm.reply_target === null ? null : JSON.stringify(adm.reply_target), result.reply],
    );
    await sql.query(
      `UPDATE admissions SET state = 'terminal', outcome = $2, error = $3, finished_at = now() WHERE id = $1`,
      [admissionId, result.outcome, result.error ?? null],
    );
    return { obligationId: ob.rows[0]!.id, messageId: msg.id };
  });
}
