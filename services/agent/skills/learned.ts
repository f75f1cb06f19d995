// Learned skills: the ones an agent writes itself (skill_manage), in the same versioned skill
// rows as GitOps and bundled skills, under the agent's own reserved namespace
// `hermes:agent:<agentId>` — no other agent reads or writes them. Every change is a new version
// with its provenance (author 'agent', the source session, the content hash); nothing is
// overwritten, and a delete is a tombstone version, so any version can be restored later.
// A write takes the skill's transaction-scoped advisory lock and works on its current version.
import { sha256, canonicalJson, pruneSkillVersions, type Db } from '../../core/index.js';

export const learnedNamespace = (agentId: string): string => `hermes:agent:${agentId}`;

/** A learned skill's content: the Skill spec fields (Hermes' front matter camelCased). */
export interface LearnedSkill {
  name: string;
  description: string;
  version?: string;
  tags: string[];
  relatedSkills: string[];
  requiredEnvironmentVariables: { name: string; prompt?: string; help?: string; requiredFor?: string }[];
  platforms?: string[];
  hermes?: Record<string, unknown>;
  body: string;
  files: { path: string; content: string }[];
}

/** The content stored for a deleted skill (its last version). */
interface Tombstone { deleted: true; name: string }

/** `liveSkills`: how many learned skills the agent has now (not deleted, not archived by the curator). */
export interface LearnedState { skill: LearnedSkill | undefined; version: number; pinned: boolean; liveSkills: number }

const isTombstone = (c: unknown): c is Tombstone => typeof c === 'object' && c !== null && (c as Tombstone).deleted === true;

async function current(sql: Pick<Db['pool'], 'query'>, agentId: string, name: string): Promise<LearnedState & { id?: string }> {
  const { rows } = await sql.query<{ id: string | null; version: number | null; pinned: boolean | null; content: unknown; live: number }>(`
    SELECT s.id, s.current_version AS version, s.pinned, v.content,
      (SELECT count(*)::int FROM skills l JOIN skill_versions lv ON lv.skill_id = l.id AND lv.version = l.current_version
        WHERE l.namespace = $1 AND l.curator_state <> 'archived' AND lv.content->>'deleted' IS DISTINCT FROM 'true') AS live
    FROM (SELECT 1) one
    LEFT JOIN skills s ON s.namespace = $1 AND s.name = $2
    LEFT JOIN skill_versions v ON v.skill_id = s.id AND v.version = s.current_version`, [learnedNamespace(agentId), name]);
  const row = rows[0]!;
  if (!row.id) return { skill: undefined, version: 0, pinned: false, liveSkills: row.live };
  return { id: row.id, skill: isTombstone(row.content) ? undefined : (row.content as LearnedSkill), version: row.version!, pinned: row.pinned!, liveSkills: row.live };
}

export interface LearnedVersion {
  version: number;
  hash: string;
  author: string | null;
  sourceSessionId: string | null;
  createdAt: Date;
  deleted: boolean;
  content: LearnedSkill | undefined;
}

export interface LearnedSkillStore {
  read(agentId: string, name: string): Promise<LearnedState>;
  /** Every version of `name`, newest first (a delete is a version too). */
  history(agentId: string, name: string): Promise<LearnedVersion[]>;
  /**
   * Writes the next version of `name` from its current state (`change` returns the new content,
   * `null` to delete, or an error string to refuse); returns the new version or the refusal.
   */
  change(agentId: string, name: string, sessionId: string | null, change: (state: LearnedState) => LearnedSkill | null | string, author?: string): Promise<{ ok: true; version: number } | { ok: false; error: string }>;
}

/** The Postgres LearnedSkillStore over the process's pool. */
export function pgLearnedSkills(db: Pick<Db, 'pool' | 'tx'>): LearnedSkillStore {
  return {
    read: (agentId, name) => current(db.pool, agentId, name),
    async history(agentId, name) {
      const { rows } = await db.pool.query<{ version: number; hash: string; author: string | null; sourceSessionId: string | null; createdAt: Date; content: unknown }>(`
        SELECT v.version, v.hash, v.author, v.source_session_id AS "sourceSessionId", v.created_at AS "createdAt", v.content
        FROM skills s JOIN skill_versions v ON v.skill_id = s.id WHERE s.namespace = $1 AND s.name = $2 ORDER BY v.version DESC`, [learnedNamespace(agentId), name]);
      return rows.map(({ content, ...v }) => ({ ...v, deleted: isTombstone(content), content: isTombstone(content) ? undefined : (content as LearnedSkill) }));
    },
    change(agentId, name, sessionId, change, author = 'agent') {
      return db.tx(async (sql) => {
        await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`hermes-skill:${learnedNamespace(agentId)}:${name}`]);
        let state = await current(sql, agentId, name);
        // A write that may add a skill counts the agent's skills under one lock of the agent (always
        // taken after the skill's own), so parallel creates of different names cannot pass its bound together.
        if (!state.skill) {
          await sql.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`hermes-skills:${learnedNamespace(agentId)}`]);
          state = await current(sql, agentId, name);
        }
        const next = change(state);
        if (typeof next === 'string') return { ok: false as const, error: next };
        const content: LearnedSkill | Tombstone = next ?? { deleted: true, name };
        const hash = sha256(canonicalJson(content));
        const { rows: [skill] } = await sql.query<{ id: string }>(
          `INSERT INTO skills (id, namespace, name, skill_name, current_version, hash, trust) VALUES (gen_random_uuid(), $1, $2, $2, 0, '', 'agent')
           ON CONFLICT (namespace, name) DO UPDATE SET skill_name = EXCLUDED.skill_name RETURNING id`, [learnedNamespace(agentId), name]);
        // Content seen before (e.g. written back after a delete) is that version again: versions are unique by hash.
        const { rows: [seen] } = await sql.query<{ version: number }>('SELECT version FROM skill_versions WHERE skill_id = $1 AND hash = $2', [skill!.id, hash]);
        const version = seen?.version ?? (await sql.query<{ version: number }>(
          `INSERT INTO skill_versions (id, skill_id, version, hash, content, author, source_session_id)
           SELECT gen_random_uuid(), $1, COALESCE(MAX(version), 0) + 1, $2, $3, $5, $4 FROM skill_versions WHERE skill_id = $1 RETURNING version`,
          [skill!.id, hash, JSON.stringify(content), sessionId, author])).rows[0]!.version;
        // A write is as recent as a use: a stale or archived skill the agent edits is active (offered) again.
        await sql.query(`UPDATE skills SET current_version = $2, hash = $3, updated_at = now(), curator_state = 'active' WHERE id = $1`, [skill!.id, version, hash]);
        await pruneSkillVersions(sql, skill!.id);
        return { ok: true as const, version };
      });
    },
  };
}
