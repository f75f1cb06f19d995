// Bounded memory in Postgres (`memory_revisions`): every write inserts the store's next revision,
// so nothing is ever overwritten and any revision can be restored later. A write takes the
// store's transaction-scoped advisory lock, re-reads the newest revision and applies its batch to
// that (SPEC: "under a lock, re-read first, atomic replace"): two workers writing the same store
// apply one after the other, neither loses the other's entries. A store is one of
//   MEMORY — the agent's notes, shared by all its users (owner_key '');
//   USER   — what the agent knows about one person (owner_key = that person's users.id).
// Nothing here takes a store's key from the model: the caller binds agent and user.
import type { Db, Sql } from '../../core/index.js';
import { applyMemoryOps, type ApplyResult, type MemoryOp } from './entries.js';

/** Which store: the agent's MEMORY, or one user's USER on that agent. */
export type MemoryScope = { agentId: string; target: 'memory' } | { agentId: string; target: 'user'; userId: string };

export interface MemoryState {
  entries: string[];
  /** 0 when nothing was ever written. */
  revision: number;
}

export type WriteResult = (ApplyResult & { ok: false }) | { ok: true; entries: string[]; revision: number; changed: boolean };

export interface MemoryStore {
  read(scope: MemoryScope): Promise<MemoryState>;
  /** Applies `ops` atomically against the newest revision; `limit` is the store's size in characters. */
  write(scope: MemoryScope, ops: readonly MemoryOp[], limit: number, authorSessionId: string | null): Promise<WriteResult>;
}

const ownerKey = (scope: MemoryScope): string => (scope.target === 'user' ? scope.userId : '');

const LATEST = `SELECT entries, revision FROM memory_revisions
  WHERE agent_id = $1 AND target = $2 AND owner_key = $3 ORDER BY revision DESC LIMIT 1`;

async function latest(sql: Pick<Sql, 'query'>, scope: MemoryScope): Promise<MemoryState> {
  const { rows } = await sql.query<{ entries: unknown; revision: number }>(LATEST, [scope.agentId, scope.target, ownerKey(scope)]);
  const row = rows[0];
  if (!row) return { entries: [], revision: 0 };
  // A revision written by anything but this module could hold other JSON: only strings are entries.
  const entries = Array.isArray(row.entries) ? row.entries.filter((e): e is string => typeof e === 'string') : [];
  return { entries, revision: row.revision };
}

/** The Postgres MemoryStore over the process's pool. */
export function pgMemoryStore(db: Pick<Db, 'pool' | 'tx'>): MemoryStore {
  return {
    read: (scope) => latest(db.pool, scope),
    write(scope, ops, limit, authorSessionId) {
      return db.tx(async (sql): Promise<WriteResult> => {
        await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`hermes-memory:${scope.agentId}:${scope.target}:${ownerKey(scope)}`]);
        const current = await latest(sql, scope);
        const applied = applyMemoryOps(current.entries, ops, limit);
        if (!applied.ok) return applied;
        if (!applied.changed) return { ok: true, entries: applied.entries, revision: current.revision, changed: false };
        const revision = current.revision + 1;
        await sql.query(
          `INSERT INTO memory_revisions (agent_id, target, owner_key, user_id, revision, entries, author_session_id) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`,
          [scope.agentId, scope.target, ownerKey(scope), scope.target === 'user' ? scope.userId : null, revision, JSON.stringify(applied.entries), authorSessionId],
        );
        return { ok: true, entries: applied.entries, revision, changed: true };
      });
    },
  };
}

