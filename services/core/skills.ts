// Names shared by the skill publishers (operator, CLI) and the readers (worker).

/**
 * The `skills.namespace` of the skills bundled with the product (skills/ in the image). It has a
 * colon, so no Kubernetes namespace — and no GitOps Skill — can ever take it.
 */
export const BUNDLED_SKILLS_NAMESPACE = 'hermes:bundled';

/** A skill keeps at most this many stored versions (its current one always among them). */
export const MAX_SKILL_VERSIONS = 50;
/** …and its older versions only while all kept ones together take at most this much storage (bytes, as stored). */
export const MAX_SKILL_HISTORY_BYTES = 8_000_000;

/**
 * Drops a skill's oldest versions past {@link MAX_SKILL_VERSIONS}, or past
 * {@link MAX_SKILL_HISTORY_BYTES} of storage counted from the newest, never its current version.
 * Every change stores the whole skill (so any kept version can be restored), and a one-line patch
 * of a 1 MB skill stored another megabyte each time: without this a chat user could have the
 * model grow one skill's history without end. Sizes are `pg_column_size` (the stored, compressed
 * size, read without fetching the value). Returns how many versions went.
 */
export async function pruneSkillVersions(sql: { query: (text: string, values: unknown[]) => Promise<{ rowCount: number | null }> }, skillId: string): Promise<number> {
  const { rowCount } = await sql.query(
    `DELETE FROM skill_versions v USING (
       SELECT x.id, row_number() OVER newest AS n, sum(pg_column_size(x.content)) OVER newest AS kept
       FROM skill_versions x WHERE x.skill_id = $1 WINDOW newest AS (ORDER BY x.version DESC)) r, skills s
     WHERE v.id = r.id AND s.id = $1 AND v.version <> s.current_version AND r.n > 1 AND (r.n > $2 OR r.kept > $3)`,
    [skillId, MAX_SKILL_VERSIONS, MAX_SKILL_HISTORY_BYTES]);
  return rowCount ?? 0;
}
