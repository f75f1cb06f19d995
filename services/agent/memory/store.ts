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

export interface MemoryRevisionRow {
  revision: number;
  entries: string[];
  authorSessionId: string | null;
  createdAt: Date;
}

export interface MemoryStore {
  read(scope: MemoryScope): Promise<MemoryState>;
  /** Applies `ops` atomically against the newest revision; `limit` is the store's size in characters. */
  write(scope: MemoryScope, ops: readonly MemoryOp[], limit: number, authorSessionId: string | null): Promise<WriteResult>;
  /** Every stored revision, newest first. */
  history(scope: MemoryScope): Promise<MemoryRevisionRow[]>;
  /** Makes revision `revision`'s entries the newest revision again; false when it is not stored (never, or purged). */
  restore(scope: MemoryScope, revision: number): Promise<{ ok: true; revision: number } | { ok: false; error: string }>;
  /**
   * Empties the store for new sessions at once (a new, empty revision); with `purge`, deletes every
   * stored revision too and the stored prompts that froze it (the right to be forgotten: nothing is
   * left to restore, and running sessions stop seeing it). Returns the revisions deleted.
   */
  forget(scope: MemoryScope, purge: boolean): Promise<number>;
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

const lockStore = (sql: Pick<Sql, 'query'>, scope: MemoryScope) =>
  sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`hermes-memory:${scope.agentId}:${scope.target}:${ownerKey(scope)}`]);

async function insertRevision(sql: Pick<Sql, 'query'>, scope: MemoryScope, revision: number, entries: readonly string[], authorSessionId: string | null): Promise<void> {
  await sql.query(
    `INSERT INTO memory_revisions (agent_id, target, owner_key, user_id, revision, entries, author_session_id) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`,
    [scope.agentId, scope.target, ownerKey(scope), scope.target === 'user' ? scope.userId : null, revision, JSON.stringify(entries), authorSessionId],
  );
}

const SCOPE = 'agent_id = $1 AND target = $2 AND owner_key = $3';
const scopeParams = (scope: MemoryScope) => [scope.agentId, scope.target, ownerKey(scope)];

/** The Postgres MemoryStore over the process's pool. */
export function pgMemoryStore(db: Pick<Db, 'pool' | 'tx'>): MemoryStore {
  return {
    async history(scope) {
      const { rows } = await db.pool.query<MemoryRevisionRow>(`SELECT revision, entries, author_session_id AS "authorSessionId", created_at AS "createdAt" FROM memory_revisions WHERE ${SCOPE} ORDER BY revision DESC`, scopeParams(scope));
      return rows;
    },
    restore(scope, revision) {
      return db.tx(async (sql) => {
        await lockStore(sql, scope);
        const { rows: [old] } = await sql.query<{ entries: string[] }>(`SELECT entries FROM memory_revisions WHERE ${SCOPE} AND revision = $4`, [...scopeParams(scope), revision]);
        if (!old) return { ok: false as const, error: `revision ${revision} is not stored (it never existed, or it was purged)` };
        const next = (await latest(sql, scope)).revision + 1;
        await insertRevision(sql, scope, next, old.entries, null);
        return { ok: true as const, revision: next };
      });
    },
    forget(scope, purge) {
      return db.tx(async (sql) => {
        await lockStore(sql, scope);
        if (purge) {
          // Staged writes carry the text too (write approval): they go with the revisions.
          await sql.query(`DELETE FROM learning_writes WHERE agent_id = $1 AND kind = 'memory' AND target = $2 AND user_id IS NOT DISTINCT FROM $3::uuid`,
            [scope.agentId, scope.target, scope.target === 'user' ? scope.userId : null]);
          // A session's stored prompt froze the snapshot (MEMORY: every session of the agent; USER: the
          // sessions opened for that person): cleared, their next turn builds it again without the text.
          await sql.query(`UPDATE sessions SET system_prompt = NULL, prompt_identity = NULL
            WHERE agent_id = $1 AND system_prompt IS NOT NULL AND ($2::text = 'memory' OR user_id = $3::uuid)`,
            [scope.agentId, scope.target, scope.target === 'user' ? scope.userId : null]);
          return (await sql.query(`DELETE FROM memory_revisions WHERE ${SCOPE}`, scopeParams(scope))).rowCount ?? 0;
        }
        const current = await latest(sql, scope);
        if (current.entries.length) await insertRevision(sql, scope, current.revision + 1, [], null);
        return 0;
      });
    },
    read: (scope) => latest(db.pool, scope),
    write(scope, ops, limit, authorSessionId) {
      return db.tx(async (sql): Promise<WriteResult> => {
        await lockStore(sql, scope);
        const current = await latest(sql, scope);
        const applied = applyMemoryOps(current.entries, ops, limit);
        if (!applied.ok) return applied;
        if (!applied.changed) return { ok: true, entries: applied.entries, revision: current.revision, changed: false };
        const revision = current.revision + 1;
        await insertRevision(sql, scope, revision, applied.entries, authorSessionId);
        return { ok: true, entries: applied.entries, revision, changed: true };
      });
    },
  };
}

