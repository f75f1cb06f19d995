// Where a turn stands, read once (no waiting), for `GET /v1/responses/{id}` and `GET /v1/runs/{id}`:
// its admission, followed through the resumes that continue it after shutdown cuts (as a waiter
// would), and once settled, its reply and usage.
import { getAdmissionStatus, readTurnEnd, type AdmissionProgress, type Obligation, type TurnUsage } from '../core/index.js';
import type { Db } from '../core/index.js';
import { isSettled, type TurnEnd } from './waiter.js';

export interface TurnView {
  admission: AdmissionProgress;
  /** Set once the turn settled. */
  end?: { reply: Obligation | undefined; usage: TurnUsage };
}

/** Resumes chain at most this deep (a session is suspended after 3 cuts in a row). */
const MAX_RESUMES = 8;

export async function readTurnView(db: Db, admissionId: string): Promise<TurnView | undefined> {
  let status = await getAdmissionStatus(db.pool, admissionId);
  for (let i = 0; status && status.outcome === 'interrupted' && status.continuedBy && i < MAX_RESUMES; i++) {
    status = await getAdmissionStatus(db.pool, status.continuedBy);
  }
  if (!status) return undefined;
  const admission: AdmissionProgress = { id: status.id, state: status.state, outcome: status.outcome };
  return isSettled(admission) ? { admission, end: await readTurnEnd(db.pool, status.id) } : { admission };
}

export const viewOfEnd = (end: TurnEnd): TurnView => ({ admission: end.admission, end: { reply: end.reply, usage: end.usage } });
