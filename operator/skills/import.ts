// `hermes skills import DIR`: a Hermes skill folder (SKILL.md with YAML front matter, plus
// references/, templates/, scripts/, assets/) → a Skill manifest. Hermes' snake_case front matter
// maps to the camelCase spec; unknown front-matter keys are kept under an annotation so nothing
// is silently dropped.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { parse, stringify } from 'yaml';
import { apiVersion } from '../api/common.js';
import { skillSchema, type Skill } from '../api/skill.js';

type Front = Record<string, unknown>;

/** Splits SKILL.md into front matter and body; throws when the front matter is missing. */
export function splitSkillMd(text: string): { front: Front; body: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!m) throw new Error('SKILL.md must start with YAML front matter between --- lines');
  const front = (parse(m[1]!) ?? {}) as Front;
  return { front, body: m[2]!.replace(/^\s*\n/, '') };
}

const list = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.map(String) : undefined);

function hermesMeta(front: Front): Record<string, unknown> | undefined {
  const h = ((front.metadata as Front | undefined)?.hermes ?? undefined) as Front | undefined;
  if (!h) return undefined;
  return Object.fromEntries(Object.entries({
    tags: list(h.tags), relatedSkills: list(h.related_skills),
    requiresToolsets: list(h.requires_toolsets), requiresTools: list(h.requires_tools),
    fallbackForToolsets: list(h.fallback_for_toolsets), fallbackForTools: list(h.fallback_for_tools),
    config: Array.isArray(h.config) ? h.config.map((c: Front) => ({ key: String(c.key), ...(c.description ? { description: String(c.description) } : {}), ...(c.default !== undefined ? { default: String(c.default) } : {}), ...(c.prompt ? { prompt: String(c.prompt) } : {}) })) : undefined,
  }).filter(([, v]) => v !== undefined));
}

const known = new Set(['name', 'description', 'version', 'author', 'license', 'platforms', 'tags', 'related_skills', 'required_environment_variables', 'metadata']);

function specFrom(front: Front, body: string, files: { path: string; content: string }[]): Record<string, unknown> {
  const env = Array.isArray(front.required_environment_variables) ? front.required_environment_variables.map((e: Front) => ({
    name: String(e.name), ...(e.prompt ? { prompt: String(e.prompt) } : {}), ...(e.help ? { help: String(e.help) } : {}), ...(e.required_for ? { requiredFor: String(e.required_for) } : {}),
  })) : [];
  const hermes = hermesMeta(front);
  return Object.fromEntries(Object.entries({
    name: String(front.name ?? ''), description: String(front.description ?? '').trim(),
    version: front.version === undefined ? undefined : String(front.version),
    author: front.author === undefined ? undefined : String(front.author),
    license: front.license === undefined ? undefined : String(front.license),
    platforms: list(front.platforms), tags: list(front.tags) ?? [], relatedSkills: list(front.related_skills) ?? [],
    requiredEnvironmentVariables: env, ...(hermes ? { hermes } : {}), trust: 'community', body, files,
  }).filter(([, v]) => v !== undefined));
}

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

/** Reads a skill folder and returns the validated Skill manifest. */
export async function importSkillDir(dir: string, namespace?: string): Promise<Skill> {
  const { front, body } = splitSkillMd(await readFile(join(dir, 'SKILL.md'), 'utf8'));
  const extra = Object.keys(front).filter((k) => !known.has(k));
  const manifest = {
    apiVersion, kind: 'Skill',
    metadata: {
      name: objectNameFor(String(front.name ?? '')),
      ...(namespace ? { namespace } : {}),
      ...(extra.length ? { annotations: { 'hermes.dev/extra-front-matter': JSON.stringify(Object.fromEntries(extra.map((k) => [k, front[k]]))) } } : {}),
    },
    spec: specFrom(front, body, await extraFiles(dir)),
  };
  const parsed = skillSchema.safeParse(manifest);
  if (!parsed.success) throw new Error(`${dir}: not a valid skill: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return manifest as unknown as Skill;
}

export const skillManifestYaml = (s: Skill): string => stringify(s, { lineWidth: 0 });
