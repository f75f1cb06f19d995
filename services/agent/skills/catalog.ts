// The skills an agent offers: the bundled ones (skills/ in the image, published under
// BUNDLED_SKILLS_NAMESPACE), the Skill resources its Agent selects (GitOps) and the skills it
// learned (skill_manage, learned.ts), each at its current version in Postgres — filtered by Hermes' requirements (metadata.hermes.requires_toolsets /
// requires_tools: hidden unless all are enabled; fallback_for_toolsets / fallback_for_tools:
// hidden when any is; platforms: hidden unless linux, where commands run). A selected Skill wins
// over a bundled one of the same name. Read when a session's prompt is built (the index) and
// when skills_list / skill_view run — never cached across turns, so an edit reaches the next use.
import { BUNDLED_SKILLS_NAMESPACE, type CompiledAgent, type Db } from '../../core/index.js';
import { learnedNamespace } from './learned.js';

export type SkillSource = 'gitops' | 'learned' | 'bundled';

export interface SkillFile { path: string; content: string }

/** One skill as stored (the Skill spec: Hermes' SKILL.md front matter, camelCased) and where it came from. */
export interface CatalogSkill {
  name: string;
  description: string;
  source: SkillSource;
  version?: string;
  tags: string[];
  platforms?: string[];
  requiredEnvironmentVariables: { name: string; prompt?: string; help?: string; requiredFor?: string }[];
  hermes?: { requiresToolsets?: string[]; requiresTools?: string[]; fallbackForToolsets?: string[]; fallbackForTools?: string[]; tags?: string[]; relatedSkills?: string[] };
  relatedSkills: string[];
  body: string;
  files: SkillFile[];
}

/** What is enabled for the agent: its toolsets and the names of its tools. */
export interface Enabled { toolsets: readonly string[]; tools: readonly string[] }

interface Row { namespace: string; content: Omit<CatalogSkill, 'source'> }

const RANK: Record<SkillSource, number> = { gitops: 0, learned: 1, bundled: 2 };

/**
 * Every skill the agent may be offered, before requirements, one per name: a selected GitOps
 * Skill first (it supersedes a learned copy), then the agent's learned skills, then bundled ones.
 */
export async function readSkillCatalog(db: Pick<Db, 'pool'>, agentId: string, agent: Pick<CompiledAgent, 'agent' | 'skills'>): Promise<CatalogSkill[]> {
  const objects = (agent.skills ?? []).map((s) => s.object);
  const learned = learnedNamespace(agentId);
  const { rows } = await db.pool.query<Row>(`
    SELECT s.namespace, v.content FROM skills s JOIN skill_versions v ON v.skill_id = s.id AND v.version = s.current_version
    WHERE (s.namespace = $1 OR (s.namespace = $4 AND s.curator_state <> 'archived') OR (s.namespace = $2 AND s.name = ANY($3::text[]))) AND NOT (v.content ? 'deleted')`,
  [BUNDLED_SKILLS_NAMESPACE, agent.agent.namespace, objects, learned]);
  const byName = new Map<string, CatalogSkill>();
  const sourceOf = (ns: string): SkillSource => (ns === BUNDLED_SKILLS_NAMESPACE ? 'bundled' : ns === learned ? 'learned' : 'gitops');
  const ranked = rows.map((r) => ({ ...r.content, tags: r.content.tags ?? [], relatedSkills: r.content.relatedSkills ?? [], requiredEnvironmentVariables: r.content.requiredEnvironmentVariables ?? [], files: r.content.files ?? [], source: sourceOf(r.namespace) }))
    .sort((a, b) => RANK[a.source] - RANK[b.source]);
  for (const skill of ranked) if (!byName.has(skill.name)) byName.set(skill.name, skill);
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** Why `skill` is not offered with `enabled`, or undefined when it is. */
export function unmetRequirement(skill: CatalogSkill, enabled: Enabled): string | undefined {
  const h = skill.hermes ?? {};
  const toolsets = new Set(enabled.toolsets);
  const tools = new Set(enabled.tools);
  const missingSet = (h.requiresToolsets ?? []).filter((t) => !toolsets.has(t));
  if (missingSet.length) return `needs the ${missingSet.join(', ')} toolset${missingSet.length > 1 ? 's' : ''}`;
  const missingTools = (h.requiresTools ?? []).filter((t) => !tools.has(t));
  if (missingTools.length) return `needs the ${missingTools.join(', ')} tool${missingTools.length > 1 ? 's' : ''}`;
  const replacedSet = (h.fallbackForToolsets ?? []).find((t) => toolsets.has(t));
  if (replacedSet) return `is a fallback for the ${replacedSet} toolset, which is enabled`;
  const replacedTool = (h.fallbackForTools ?? []).find((t) => tools.has(t));
  if (replacedTool) return `is a fallback for the ${replacedTool} tool, which is enabled`;
  // Hermes compares platform names without case (`platforms: [Linux]` runs on linux).
  if (skill.platforms?.length && !skill.platforms.some((p) => p.trim().toLowerCase() === 'linux')) return `runs on ${skill.platforms.join(', ')} only (commands run on linux)`;
  return undefined;
}

/** The skills offered with `enabled`, by name. */
export const offeredSkills = (all: readonly CatalogSkill[], enabled: Enabled): CatalogSkill[] => all.filter((s) => !unmetRequirement(s, enabled));

/**
 * The skills index of the stable prompt layer: every offered skill's name and description, sorted
 * by name (the same skills give the same bytes: the prefix stays cache-friendly). '' when none.
 */
export function skillsIndexBlock(skills: readonly CatalogSkill[]): string {
  if (skills.length === 0) return '';
  return [
    '# Skills',
    '',
    'Skills are tested procedures for recurring tasks. Before you answer, check whether one of these fits the request; if one does, load it with skill_view(name) and follow it. The user can also start one with /<skill-name>.',
    '',
    ...skills.map((s) => `- ${s.name}: ${s.description.replace(/\s+/g, ' ').trim()}`),
  ].join('\n');
}
