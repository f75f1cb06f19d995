// Bundled skills: the Hermes skill folders under `skills/` that ship with the product, published
// into Postgres like GitOps skills (same versioned rows) under the reserved namespace
// BUNDLED_SKILLS_NAMESPACE, which no Kubernetes namespace can be (it has a colon). Every agent is
// offered them (subject to each skill's requirements); a Skill an Agent selects with the same
// name wins. `hermes worker`, `hermes operator` and `hermes dev` publish them at start: unchanged
// content writes nothing, a skill removed from the folder is removed from Postgres.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLED_SKILLS_NAMESPACE, type Db, type Logger } from '../../services/core/index.js';
import { importSkillDir } from './import.js';
import { scanContent } from './scan.js';
import { deleteSkill, publishSkill } from './store.js';

/** The product's own skills/ folder (beside operator/ in the checkout and in the image). */
export const BUNDLED_SKILLS_DIR = fileURLToPath(new URL('../../skills/', import.meta.url));

export interface BundledResult {
  published: string[];
  removed: string[];
  /** Folders that are not valid skills or fail the scan: not offered, and said why. */
  refused: string[];
}

/** Publishes every skill folder of `dir` (trust builtin) and removes bundled rows whose folder is gone. */
export async function publishBundledSkills(db: Db, dir = BUNDLED_SKILLS_DIR): Promise<BundledResult> {
  const result: BundledResult = { published: [], removed: [], refused: [] };
  const folders = existsSync(dir) ? (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory() && existsSync(join(dir, e.name, 'SKILL.md'))).map((e) => e.name).sort() : [];
  const kept = new Set<string>();
  for (const folder of folders) {
    try {
      const skill = await importSkillDir(join(dir, folder));
      const spec = { ...skill.spec, trust: 'builtin' as const };
      const findings = scanContent([{ file: 'SKILL.md', text: `${spec.description}\n${spec.body}` }, ...spec.files.map((f) => ({ file: f.path, text: f.content }))]);
      if (findings.length) throw new Error(findings.map((f) => f.message).join('; '));
      // Replicas starting together publish the same content: a lost race on the version row is retried once.
      await publishSkill(db, { namespace: BUNDLED_SKILLS_NAMESPACE, name: skill.metadata.name }, spec).catch((err: { code?: string }) => {
        if (err.code !== '23505') throw err;
        return publishSkill(db, { namespace: BUNDLED_SKILLS_NAMESPACE, name: skill.metadata.name }, spec);
      });
      kept.add(skill.metadata.name);
      result.published.push(spec.name);
    } catch (err) {
      result.refused.push(`${folder}: ${(err as Error).message}`);
    }
  }
  const { rows } = await db.pool.query<{ name: string }>('SELECT name FROM skills WHERE namespace = $1', [BUNDLED_SKILLS_NAMESPACE]);
  for (const { name } of rows.filter((r) => !kept.has(r.name))) {
    await deleteSkill(db, BUNDLED_SKILLS_NAMESPACE, name);
    result.removed.push(name);
  }
  return result;
}

/** {@link publishBundledSkills} at a process's start: what happened is logged; a failure never stops the process. */
export async function publishBundledSkillsAtStart(db: Db, log: Logger, dir = BUNDLED_SKILLS_DIR): Promise<void> {
  try {
    const r = await publishBundledSkills(db, dir);
    log.info({ published: r.published, removed: r.removed }, 'Bundled skills published');
    if (r.refused.length) log.warn({ refused: r.refused }, 'Bundled skills not offered: not valid or failed the scan');
  } catch (err) {
    log.warn({ err }, 'Publishing the bundled skills failed; agents offer the versions stored earlier, if any');
  }
}
