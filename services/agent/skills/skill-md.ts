// Hermes' SKILL.md: YAML front matter between --- lines, then the Markdown body. The snake_case
// front matter maps to the Skill spec's camelCase fields (operator/api/skill.ts); used by
// `hermes skills import`, the bundled skills and the agent's own skill_manage.
import { parse, stringify, YAMLParseError } from 'yaml';

type Front = Record<string, unknown>;

/** Front-matter keys the spec has a field for; others are kept aside by the importer. */
export const KNOWN_FRONT_MATTER = new Set(['name', 'description', 'version', 'author', 'license', 'platforms', 'tags', 'related_skills', 'required_environment_variables', 'metadata']);

/**
 * The front matter's YAML; a syntax error says so, at its line of SKILL.md (the parser counts
 * from the front matter, one line below the opening ---), with the parser's reason.
 */
function parseFront(yaml: string): unknown {
  try {
    return parse(yaml);
  } catch (err) {
    if (!(err instanceof YAMLParseError)) throw err;
    const at = err.linePos?.[0];
    const reason = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new Error(`the front matter of SKILL.md is not valid YAML${at ? ` (line ${at.line + 1}, column ${at.col})` : ''}: ${reason}`, { cause: err });
  }
}

/** Splits SKILL.md into front matter and body; throws when the front matter is missing or not YAML. */
export function splitSkillMd(text: string): { front: Front; body: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!m) throw new Error('SKILL.md must start with YAML front matter between --- lines');
  const front = (parseFront(m[1]!) ?? {}) as Front;
  if (typeof front !== 'object' || Array.isArray(front)) throw new Error('the front matter of SKILL.md must be a YAML mapping');
  return { front, body: m[2]!.replace(/^\s*\n/, '') };
}

/**
 * A list field as Hermes reads it: a YAML list, or one value written without brackets
 * (`platforms: macos`, `tags: git, writing` — Hermes takes a lone value as a one-item list and
 * splits tags on commas); anything else (a mapping) is not a list.
 */
const list = (v: unknown): string[] | undefined => {
  if (Array.isArray(v)) return v.map(String);
  if (typeof v === 'string') return v.split(',').map((s) => s.trim()).filter(Boolean);
  return typeof v === 'number' || typeof v === 'boolean' ? [String(v)] : undefined;
};

/**
 * The text of the scalar field `key` (a string, number or boolean, as YAML reads `version: 1.2`);
 * undefined when absent; throws, naming it, for a mapping or a list (it is no text: stored it
 * would read "[object Object]").
 */
function scalar(front: Front, key: string): string | undefined {
  const v = front[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'object') throw new Error(`${key} in the front matter of SKILL.md must be text, not ${Array.isArray(v) ? 'a list' : 'a mapping'}`);
  return String(v);
}

/**
 * The mappings of the list `v` (front-matter key `key`; a plain string item is `{ [named]: item }`);
 * throws, naming the item, when one is something else (a null, a number, a list).
 */
function mappings(v: unknown, key: string, named: string): Front[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new Error(`${key} in the front matter of SKILL.md must be a list of mappings`);
  return v.map((item: unknown, i) => {
    if (typeof item === 'string') return { [named]: item };
    if (!item || typeof item !== 'object' || Array.isArray(item)) throw new Error(`${key}[${i}] in the front matter of SKILL.md must be a mapping (got ${item === null ? 'null' : Array.isArray(item) ? 'a list' : typeof item})`);
    return item as Front;
  });
}

function hermesMeta(front: Front): Record<string, unknown> | undefined {
  const meta = front.metadata;
  const h = (meta && typeof meta === 'object' ? (meta as Front).hermes : undefined) as Front | undefined;
  if (!h || typeof h !== 'object') return undefined;
  const config = mappings(h.config, 'metadata.hermes.config', 'key');
  return Object.fromEntries(Object.entries({
    tags: list(h.tags), relatedSkills: list(h.related_skills),
    requiresToolsets: list(h.requires_toolsets), requiresTools: list(h.requires_tools),
    fallbackForToolsets: list(h.fallback_for_toolsets), fallbackForTools: list(h.fallback_for_tools),
    config: config?.map((c) => ({ key: String(c.key), ...(c.description ? { description: String(c.description) } : {}), ...(c.default !== undefined ? { default: String(c.default) } : {}), ...(c.prompt ? { prompt: String(c.prompt) } : {}) })),
  }).filter(([, v]) => v !== undefined));
}

/**
 * The Skill spec fields of a parsed SKILL.md and its files (`trust` only when given), in the spec's
 * order; throws, saying which, when a list of mappings holds something else.
 */
export function skillFieldsFrom(front: Front, body: string, files: { path: string; content: string }[], trust?: string): Record<string, unknown> {
  const env = mappings(front.required_environment_variables, 'required_environment_variables', 'name')?.map((e) => ({
    name: String(e.name), ...(e.prompt ? { prompt: String(e.prompt) } : {}), ...(e.help ? { help: String(e.help) } : {}), ...(e.required_for ? { requiredFor: String(e.required_for) } : {}),
  })) ?? [];
  const hermes = hermesMeta(front);
  return Object.fromEntries(Object.entries({
    name: scalar(front, 'name') ?? '', description: (scalar(front, 'description') ?? '').trim(),
    version: scalar(front, 'version'), author: scalar(front, 'author'), license: scalar(front, 'license'),
    // Hermes compares platform names without case: `Linux` is linux (and the Skill spec takes lower case only).
    platforms: list(front.platforms)?.map((p) => p.toLowerCase()), tags: list(front.tags) ?? [], relatedSkills: list(front.related_skills) ?? [],
    requiredEnvironmentVariables: env, ...(hermes ? { hermes } : {}), trust, body, files,
  }).filter(([, v]) => v !== undefined));
}

/** Stored (camelCase) fields of a skill, as skillFieldsFrom returns them. */
export interface SkillMdFields {
  name: string;
  description: string;
  body: string;
  version?: string;
  author?: string;
  license?: string;
  platforms?: string[];
  tags?: string[];
  relatedSkills?: string[];
  requiredEnvironmentVariables?: { name: string; prompt?: string; help?: string; requiredFor?: string }[];
  hermes?: Record<string, unknown>;
}

/** The mapping without its empty fields (undefined, or an empty list). */
const present = (o: Record<string, unknown>): Front => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && !(Array.isArray(v) && v.length === 0)));

/**
 * SKILL.md text for stored fields — the inverse of {@link skillFieldsFrom}: every field of the front
 * matter in Hermes' snake_case (requirements, environment variables, metadata.hermes), so an
 * exported folder, a staged edit's diff and an edit built from it lose none of them.
 */
export function skillMdText(fields: SkillMdFields): string {
  const h = fields.hermes ?? {};
  const hermes = present({
    tags: h.tags, related_skills: h.relatedSkills, requires_toolsets: h.requiresToolsets, requires_tools: h.requiresTools,
    fallback_for_toolsets: h.fallbackForToolsets, fallback_for_tools: h.fallbackForTools, config: h.config,
  });
  const front = present({
    name: fields.name, description: fields.description, version: fields.version, author: fields.author, license: fields.license,
    platforms: fields.platforms, tags: fields.tags, related_skills: fields.relatedSkills,
    required_environment_variables: fields.requiredEnvironmentVariables?.map((e) => present({ name: e.name, prompt: e.prompt, help: e.help, required_for: e.requiredFor })),
    metadata: Object.keys(hermes).length ? { hermes } : undefined,
  });
  return `---\n${stringify(front, { lineWidth: 0 }).trimEnd()}\n---\n${fields.body}`;
}
