// Skill content in Postgres: immutable versions identified by the hash of their canonical JSON,
// and the skill's current version. Re-publishing unchanged content writes nothing.
import { canonicalJson, pruneSkillVersions, sha256, type Db } from '../../services/core/index.js';
import type { SkillSpec } from '../api/skill.js';

export const skillHash = (spec: SkillSpec): string => sha256(canonicalJson(spec));

export interface StoredSkill { version: number; hash: string }

export async function findSkill(db: Db, namespace: string, name: string): Promise<StoredSkill | undefined> {
  const { rows } = await db.pool.query<StoredSkill>('SELECT current_version AS version, hash FROM skills WHERE namespace = $1 AND name = $2', [namespace, name]);
  return rows[0];
}

/** Stores `spec` as the skill's current content; a new hash gets the next version number. */
export async function publishSkill(db: Db, key: { namespace: string; name: string }, spec: SkillSpec): Promise<StoredSkill & { changed: boolean }> {
  const hash = skillHash(spec);
  return db.tx(async (sql) => {
    const { rows: [skill] } = await sql.query<{ id: string; hash: string; current_version: number }>(
      `INSERT INTO skills (id, namespace, name, skill_name, current_version, hash, trust) VALUES (gen_random_uuid(), $1, $2, $3, 0, '', $4)
       ON CONFLICT (namespace, name) DO UPDATE SET skill_name = EXCLUDED.skill_name RETURNING id, hash, current_version`,
      [key.namespace, key.name, spec.name, spec.trust]);
    if (skill!.hash === hash) return { version: skill!.current_version, hash, changed: false };
    const { rows: [existing] } = await sql.query<{ version: number }>('SELECT version FROM skill_versions WHERE skill_id = $1 AND hash = $2', [skill!.id, hash]);
    let version = existing?.version;
    if (version === undefined) {
      const { rows: [v] } = await sql.query<{ version: number }>(
        `INSERT INTO skill_versions (id, skill_id, version, hash, content)
         SELECT gen_random_uuid(), $1, COALESCE(MAX(version), 0) + 1, $2, $3 FROM skill_versions WHERE skill_id = $1 RETURNING version`,
        [skill!.id, hash, JSON.stringify(spec)]);
      version = v!.version;
    }
    await sql.query('UPDATE skills SET current_version = $2, hash = $3, trust = $4, skill_name = $5, updated_at = now() WHERE id = $1', [skill!.id, version, hash, spec.trust, spec.name]);
    await pruneSkillVersions(sql, skill!.id);
    return { version, hash, changed: true };
  });
}

export async function deleteSkill(db: Db, namespace: string, name: string): Promise<number> {
  const { rowCount } = await db.pool.query('DELETE FROM skills WHERE namespace = $1 AND name = $2', [namespace, name]);
  return rowCount ?? 0;
}
