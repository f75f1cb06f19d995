// The curator (SPEC: review weekly, stale after 14 days unused, archived after 30, pinned exempt,
// archive never deletes): keeps an agent's learned skills from piling up. A learned skill is
// "used" when the agent loads it (skill_view, /<skill>); a used stale skill is active again, and so
// is a stale or archived one the agent writes (learned.ts): a write is as recent as a use.
// Archived skills are not offered (the index, skills_list, skill_view) but keep every version;
// `/curator restore` brings one back. Only learned skills are curated: GitOps and bundled skills
// belong to people. Every step is one idempotent UPDATE, so any number of workers may run it.
import type { Db } from '../../core/index.js';
import { learnedNamespace } from './learned.js';

export const STALE_DAYS = 14;
export const ARCHIVE_DAYS = 30;

export type CuratorState = 'active' | 'stale' | 'archived';

export interface CuratedSkill {
  name: string;
  state: CuratorState;
  pinned: boolean;
  lastUsedAt: Date | null;
  updatedAt: Date;
}

const LEARNED = `namespace LIKE 'hermes:agent:%'`;

/** Marks `name` used now (a stale skill is active again). */
export async function markSkillUsed(db: Pick<Db, 'pool'>, agentId: string, name: string, now = new Date()): Promise<void> {
  await db.pool.query(`UPDATE skills SET last_used_at = $3, curator_state = CASE WHEN curator_state = 'stale' THEN 'active' ELSE curator_state END
    WHERE namespace = $1 AND name = $2`, [learnedNamespace(agentId), name, now]);
}

/**
 * One curator pass at `now` — over every agent's learned skills, or one agent's: unpinned skills
 * unused for 30 days are archived, for 14 days stale. Returns the names it changed.
 */
export async function runCurator(db: Pick<Db, 'pool'>, now: Date, agentId?: string): Promise<{ stale: string[]; archived: string[] }> {
  const scope = agentId ? `namespace = $2` : LEARNED;
  const params = (days: number) => (agentId ? [new Date(now.getTime() - days * 86_400_000), learnedNamespace(agentId)] : [new Date(now.getTime() - days * 86_400_000)]);
  // Unused since its last use or its last write, whichever is later (GREATEST skips a NULL: never loaded).
  const lastUse = 'GREATEST(last_used_at, updated_at)';
  const archived = await db.pool.query<{ name: string }>(`UPDATE skills SET curator_state = 'archived'
    WHERE ${scope} AND NOT pinned AND curator_state <> 'archived' AND ${lastUse} < $1 RETURNING name`, params(ARCHIVE_DAYS));
  const stale = await db.pool.query<{ name: string }>(`UPDATE skills SET curator_state = 'stale'
    WHERE ${scope} AND NOT pinned AND curator_state = 'active' AND ${lastUse} < $1 RETURNING name`, params(STALE_DAYS));
  return { stale: stale.rows.map((r) => r.name).sort(), archived: archived.rows.map((r) => r.name).sort() };
}

/** The agent's learned skills (deleted ones left out) with their curator state. */
export async function curatedSkills(db: Pick<Db, 'pool'>, agentId: string): Promise<CuratedSkill[]> {
  const { rows } = await db.pool.query<CuratedSkill>(`
    SELECT s.name, s.curator_state AS state, s.pinned, s.last_used_at AS "lastUsedAt", s.updated_at AS "updatedAt"
    FROM skills s JOIN skill_versions v ON v.skill_id = s.id AND v.version = s.current_version
    WHERE s.namespace = $1 AND NOT (v.content ? 'deleted') ORDER BY s.name`, [learnedNamespace(agentId)]);
  return rows;
}

/**
 * pin / unpin / restore (archived → active, counted as used now; a skill that is not archived is
 * left as it is). The skill's curator state before the action; undefined when the agent has no such learned skill
 * (never written, or deleted: a pinned tombstone would refuse the agent's next create of that name).
 */
export async function curate(db: Pick<Db, 'pool'>, agentId: string, name: string, action: 'pin' | 'unpin' | 'restore', now = new Date()): Promise<CuratorState | undefined> {
  const set = action === 'pin' ? 'pinned = true' : action === 'unpin' ? 'pinned = false' : `curator_state = CASE WHEN b.state = 'archived' THEN 'active' ELSE s.curator_state END, last_used_at = CASE WHEN b.state = 'archived' THEN $3::timestamptz ELSE s.last_used_at END`;
  const { rows } = await db.pool.query<{ state: CuratorState }>(`
    UPDATE skills s SET ${set}
    FROM (SELECT k.id, k.curator_state AS state FROM skills k JOIN skill_versions v ON v.skill_id = k.id AND v.version = k.current_version
      WHERE k.namespace = $1 AND k.name = $2 AND NOT (v.content ? 'deleted') FOR UPDATE OF k) b
    WHERE s.id = b.id RETURNING b.state`, action === 'restore' ? [learnedNamespace(agentId), name, now] : [learnedNamespace(agentId), name]);
  return rows[0]?.state;
}
