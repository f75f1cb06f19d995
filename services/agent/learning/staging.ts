// Write approval (SPEC "write_approval"; issue 12 point 6): memory and skill writes of an agent
// whose Profile asks for it — by default every agent with more than one allowed user — are staged
// here with a diff instead of being applied; an admin approves or rejects each (`/memory …`,
// `/skills …`, `hermes review`). The decision is recorded with who, when and the content hash; an
// approved write is applied then, against the store as it is, and reaches new sessions.
import { canonicalJson, sha256, type CompiledAgent, type Db } from '../../core/index.js';

export type StagedKind = 'memory' | 'skill';
export type StagedState = 'pending' | 'approved' | 'rejected' | 'failed';

export interface StagedWrite {
  id: string;
  agentId: string;
  kind: StagedKind;
  /** memory: `memory` | `user`; skill: the skill's name. */
  target: string;
  userId: string | null;
  /** The person whose USER store a memory write is for, as spec.admins names people (`api:bob`); null for MEMORY and skills. */
  person: string | null;
  payload: unknown;
  diff: string;
  contentHash: string;
  state: StagedState;
  sourceSessionId: string | null;
  decidedBy: string | null;
  decidedAt: Date | null;
  result: string | null;
  createdAt: Date;
}

/** What a tool stages: the write's own fields; the store adds id, hash, state and times. */
export type StageInput = Pick<StagedWrite, 'agentId' | 'kind' | 'target' | 'userId' | 'payload' | 'diff'> & { sessionId: string | null };

/**
 * Writes of one kind an agent holds for review at most: any chat user can ask the model to stage
 * writes, and an admin's `/memory pending` / `/skills pending` lists them all.
 */
export const MAX_PENDING_WRITES = 100;

/** `again`: the same write (target, person and content) was waiting already and is returned instead of a copy; `full`: none staged, this many wait. */
export type StageResult = { staged: StagedWrite; again: boolean } | { full: number };

export interface StagingStore {
  stage(input: StageInput): Promise<StageResult>;
  pending(agentId: string, kind: StagedKind): Promise<StagedWrite[]>;
  /** The write of `agentId` and `kind` whose id starts with `prefix` (at least 6 hex digits), or why not. */
  find(agentId: string, kind: StagedKind, prefix: string): Promise<StagedWrite | 'ambiguous' | undefined>;
  /** Records the decision on a pending write; false when it was no longer pending. */
  decide(id: string, state: Exclude<StagedState, 'pending'>, by: string, result: string): Promise<boolean>;
}

const COLUMNS = `id::text, agent_id AS "agentId", kind, target, user_id AS "userId",
  (SELECT u.platform || ':' || u.platform_user_id FROM users u WHERE u.id = learning_writes.user_id) AS person, payload, diff, content_hash AS "contentHash", state,
  source_session_id AS "sourceSessionId", decided_by AS "decidedBy", decided_at AS "decidedAt", result, created_at AS "createdAt"`;

/** The Postgres StagingStore over the process's pool. */
export function pgStaging(db: Pick<Db, 'pool' | 'tx'>): StagingStore {
  return {
    stage: (w) => db.tx(async (sql): Promise<StageResult> => {
      // One staging of an agent's kind at a time, so the count below holds for the insert after it.
      await sql.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`hermes-staging:${w.agentId}:${w.kind}`]);
      const hash = sha256(canonicalJson(w.payload));
      const { rows: [same] } = await sql.query<StagedWrite>(
        `SELECT ${COLUMNS} FROM learning_writes WHERE agent_id = $1 AND kind = $2 AND state = 'pending' AND target = $3
           AND user_id IS NOT DISTINCT FROM $4 AND content_hash = $5 LIMIT 1`, [w.agentId, w.kind, w.target, w.userId, hash]);
      if (same) return { staged: same, again: true };
      const { rows: [count] } = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM learning_writes WHERE agent_id = $1 AND state = 'pending' AND kind = $2`, [w.agentId, w.kind]);
      if (count!.n >= MAX_PENDING_WRITES) return { full: count!.n };
      const { rows } = await sql.query<StagedWrite>(
        `INSERT INTO learning_writes (id, agent_id, kind, target, user_id, payload, diff, content_hash, source_session_id)
         VALUES (gen_random_uuid(), $1, $2, $3, $4, $5::jsonb, $6, $7, $8) RETURNING ${COLUMNS}`,
        [w.agentId, w.kind, w.target, w.userId, JSON.stringify(w.payload), w.diff, hash, w.sessionId]);
      return { staged: rows[0]!, again: false };
    }),
    async pending(agentId, kind) {
      const { rows } = await db.pool.query<StagedWrite>(`SELECT ${COLUMNS} FROM learning_writes WHERE agent_id = $1 AND kind = $2 AND state = 'pending' ORDER BY created_at`, [agentId, kind]);
      return rows;
    },
    async find(agentId, kind, prefix) {
      if (!/^[0-9a-f-]{6,36}$/i.test(prefix)) return undefined;
      const { rows } = await db.pool.query<StagedWrite>(`SELECT ${COLUMNS} FROM learning_writes WHERE agent_id = $1 AND kind = $2 AND id::text LIKE $3 LIMIT 2`, [agentId, kind, `${prefix.toLowerCase()}%`]);
      return rows.length > 1 ? 'ambiguous' : rows[0];
    },
    async decide(id, state, by, result) {
      const { rowCount } = await db.pool.query(`UPDATE learning_writes SET state = $2, decided_by = $3, decided_at = now(), result = $4 WHERE id = $1 AND state = 'pending'`, [id, state, by, result]);
      return rowCount === 1;
    },
  };
}

/** The tool's answer when `kind` writes of the agent wait in full number: what the model should tell the user. */
export function stagingFull(kind: StagedKind, pending: number): string {
  const cmd = kind === 'memory' ? '/memory pending' : '/skills pending';
  return `${pending} ${kind} writes of this agent already wait for an admin's review (at most ${MAX_PENDING_WRITES}), so this one was not staged. Do not retry it: tell the user an admin needs to review the waiting ones first (${cmd}).`;
}

/** A short id people type: the first 8 hex digits. */
export const shortId = (id: string): string => id.slice(0, 8);

/**
 * SPEC's default: write approval is on for an agent that more than one person may use (several API
 * keys or allowlisted users, a trusted backend — one key that names any number of users —, an
 * open platform, DM pairing), off otherwise.
 */
export function hasManyUsers(agent: Pick<CompiledAgent, 'api' | 'platforms'>): boolean {
  if (agent.api?.enabled && agent.api.keys?.some((k) => k.trustedBackend)) return true;
  let users = agent.api?.enabled ? agent.api.keySha256.length : 0;
  for (const p of agent.platforms ?? []) {
    if (p.allowAll || p.dmPairing) return true;
    users += p.allowlist.length;
  }
  return users > 1;
}

/** Whether `kind` writes of `agent` wait for an admin (the Profile's setting, else {@link hasManyUsers}). */
export function writeApprovalOn(agent: Pick<CompiledAgent, 'api' | 'platforms' | 'learning'>, kind: StagedKind): boolean {
  const explicit = kind === 'memory' ? agent.learning?.memoryWriteApproval : agent.learning?.skillWriteApproval;
  return explicit ?? hasManyUsers(agent);
}
