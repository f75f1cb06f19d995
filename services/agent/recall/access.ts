// What a turn's `session_search` calls may reach: the agent's sessions of this conversation's
// person, or — for an admin who asks — all of the agent's sessions. Bound by the worker.
import type { Db } from '../../core/index.js';

export interface RecallAccess {
  db: Pick<Db, 'pool'>;
  agentId: string;
  /** The person of this conversation (users.id), or null. */
  userId: string | null;
  /** The person is an admin of the agent (`spec.admins`, or `admin: true` in `spec.access`): they may search every user's sessions. */
  admin: boolean;
  sessionId: string;
}
