// `hermes skills import DIR`: a Hermes skill folder (SKILL.md with YAML front matter, plus
// references/, templates/, scripts/, assets/) → a Skill manifest. Hermes' snake_case front matter
// maps to the camelCase spec; unknown front-matter keys are kept under an annotation so nothing
// is silently dropped.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import { KNOWN_FRONT_MATTER, skillFieldsFrom, splitSkillMd } from '../../services/agent/skills/skill-md.js';
import { apiVersion } from '../api/common.js';
import { skillSchema, type Skill } from '../api/skill.js';

export { splitSkillMd };

async function extraFiles(dir: string): Promise<{ path: string; content: string }[]> {
  const out: { path: string; content: string }[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.push({ path: relative(dir, p), content: await readFile(p, 'utf8') });
    }
  };
  for (const sub of ['references', 'templates', 'scripts', 'assets']) await walk(join(dir, sub));
  return out.sort((a, b) => a.path.localeCompare(b.path));
}

/** A DNS-1123 object name for a Hermes skill name. */
export const objectNameFor = (skillName: string): string => skillName.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63) || 'skill';

const EXPECTED = 'expected a Hermes skill folder: SKILL.md (YAML front matter, then the instructions), optionally references/, templates/, scripts/, assets/';

/** The folder's SKILL.md; a folder that is missing, is a file, or has no SKILL.md is said in one line naming what is expected. */
async function readSkillMd(dir: string): Promise<string> {
  const s = await stat(dir).catch(() => undefined);
  if (!s) throw new Error(`${dir}: no such folder (${EXPECTED})`);
  if (!s.isDirectory()) throw new Error(`${dir}: not a folder (${EXPECTED})`);
  try {
    return await readFile(join(dir, 'SKILL.md'), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR') throw new Error(`${dir}: no SKILL.md file in this folder (${EXPECTED})`, { cause: err });
    throw new Error(`${join(dir, 'SKILL.md')}: cannot be read: ${(err as Error).message}`, { cause: err });
  }
}

/** Reads a skill folder and returns the validated Skill manifest. */
export async function importSkillDir(dir: string, namespace?: string): Promise<Skill> {
  const { front, body } = splitSkillMd(await readSkillMd(dir));
  const extra = Object.keys(front).filter((k) => !KNOWN_FRONT_MATTER.has(k));
  const manifest = {
    apiVersion, kind: 'Skill',
    metadata: {
      name: objectNameFor(String(front.name ?? '')),
      ...(namespace ? { namespace } : {}),
      ...(extra.length ? { annotations: { 'hermes.dev/extra-front-matter': JSON.stringify(Object.fromEntries(extra.map((k) => [k, front[k]]))) } } : {}),
    },
    spec: skillFieldsFrom(front, body, await extraFiles(dir), 'community'),
  };
  const parsed = skillSchema.safeParse(manifest);
  if (!parsed.success) throw new Error(`${dir}: not a valid skill: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return manifest as unknown as Skill;
}

export const skillManifestYaml = (s: Skill): string => stringify(s, { lineWidth: 0 });
