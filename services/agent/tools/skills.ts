// `skills_list` and `skill_view` (toolset `skills`): progressive disclosure of the skills an
// agent offers. The prompt carries only each skill's name and description (the index);
// skill_view loads a skill's body (its SKILL.md) and, on request, one of its reference files.
import { z } from 'zod';
import { defineTool, type ToolContext } from './registry.js';
import type { CatalogSkill } from '../skills/catalog.js';
import { skillMdText } from '../skills/skill-md.js';

const NO_SKILLS = 'Skills are not available here (no skill store is configured for this worker).';

const json = (value: unknown): string => JSON.stringify(value);

/** Tags and related skills: Hermes keeps them at the top of the front matter or under metadata.hermes. */
const tagsOf = (s: CatalogSkill): string[] => [...new Set([...s.tags, ...(s.hermes?.tags ?? [])])];
const relatedOf = (s: CatalogSkill): string[] => [...new Set([...s.relatedSkills, ...(s.hermes?.relatedSkills ?? [])])];

function summary(s: CatalogSkill) {
  const tags = tagsOf(s);
  return { name: s.name, description: s.description, ...(tags.length ? { tags } : {}), source: s.source };
}

export const skillsListTool = defineTool({
  name: 'skills_list',
  description: 'List the skills you can load (name, description, tags). Use skill_view(name) to read one.',
  toolset: 'skills',
  sideEffect: 'read-only',
  schema: z.object({ tag: z.string().max(100).optional().describe('Only skills with this tag') }).strict(),
  handler: async ({ tag }, ctx: ToolContext) => {
    if (!ctx.skills) return json({ success: false, error: NO_SKILLS });
    const skills = (await ctx.skills.offered()).filter((s) => !tag || tagsOf(s).includes(tag));
    return json({ success: true, skills: skills.map(summary), count: skills.length });
  },
});

async function view(ctx: ToolContext, name: string, filePath: string | undefined): Promise<string> {
  if (!ctx.skills) return json({ success: false, error: NO_SKILLS });
  const offered = await ctx.skills.offered();
  const skill = offered.find((s) => s.name === name);
  if (!skill) return json({ success: false, error: `No skill named "${name}" is offered. Available: ${offered.map((s) => s.name).join(', ') || '(none)'}.` });
  if (filePath) {
    const file = skill.files.find((f) => f.path === filePath);
    return file ? json({ success: true, name, file_path: filePath, content: file.content })
      : json({ success: false, error: `Skill "${name}" has no file "${filePath}". Its files: ${skill.files.map((f) => f.path).join(', ') || '(none)'}.` });
  }
  await ctx.skills.used?.(skill);
  return json({
    success: true, name, description: skill.description, ...(skill.version ? { version: skill.version } : {}),
    content: skill.body,
    ...(skill.files.length ? { files: skill.files.map((f) => f.path), note: 'Load a file with skill_view(name, file_path) when the skill points to it.' } : {}),
    ...(skill.requiredEnvironmentVariables.length ? { required_environment_variables: skill.requiredEnvironmentVariables } : {}),
    ...(relatedOf(skill).length ? { related_skills: relatedOf(skill) } : {}),
    // A learned skill is the agent's to edit, and edit takes the whole SKILL.md: here it is, front
    // matter included (tags, platforms, requirements), so a rewrite built from it keeps them.
    ...(skill.source === 'learned' ? { skill_md: skillMdText(skill) } : {}),
  });
}

export const skillViewTool = defineTool({
  name: 'skill_view',
  description: 'Load a skill: its full instructions (SKILL.md), or one of its files (references, templates, scripts) with file_path. Load a skill before doing a task it covers, then follow it.',
  toolset: 'skills',
  sideEffect: 'read-only',
  schema: z.object({
    name: z.string().min(1).max(64).describe('The skill\'s name, as in the skills index'),
    file_path: z.string().max(500).optional().describe('A file of the skill, e.g. references/checklist.md'),
  }).strict(),
  handler: ({ name, file_path: filePath }, ctx: ToolContext) => view(ctx, name, filePath),
});
