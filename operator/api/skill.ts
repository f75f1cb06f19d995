// Skill: one procedural-memory document managed by GitOps. The fields are Hermes' SKILL.md front
// matter (camelCased), so an existing Hermes skill folder imports unchanged (`hermes skills import`).
import { z } from 'zod';
import { apiVersion, baseStatusShape, objectMetaSchema, withRules } from './common.js';

export const skillNameMax = 64;
export const skillDescriptionMax = 1024;
/** Hermes' guide: the index is injected every session, so descriptions should stay short. */
export const skillDescriptionAdvised = 60;

/**
 * One path segment: a plain name, never `.` or `..` (no lookahead: the apiserver checks the same
 * pattern with Go's RE2), so a file cannot name a place outside its skill folder.
 */
const fileSegment = String.raw`(?:[A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)`;

export const skillFileSchema = z.object({
  path: z.string().regex(new RegExp(`^(references|templates|scripts|assets)(/${fileSegment})+$`), 'must be under references/, templates/, scripts/ or assets/, in plain path segments (no ., .. or empty ones)')
    .describe('Path inside the skill folder: under references/, templates/, scripts/ or assets/.'),
  content: z.string().describe('File content (text).'),
});

export const requiredEnvSchema = z.object({
  name: z.string().min(1).describe('Environment variable name.'),
  prompt: z.string().optional().describe('What to ask the user for.'),
  help: z.string().optional().describe('Where to get the value.'),
  requiredFor: z.string().optional().describe('Which part of the skill needs it.'),
});

export const skillConfigEntrySchema = z.object({
  key: z.string().min(1),
  description: z.string().optional(),
  default: z.string().optional(),
  prompt: z.string().optional(),
});

export const skillHermesMetaSchema = z.object({
  tags: z.array(z.string()).optional(),
  relatedSkills: z.array(z.string()).optional(),
  requiresToolsets: z.array(z.string()).optional().describe('Hidden unless these toolsets are enabled.'),
  requiresTools: z.array(z.string()).optional().describe('Hidden unless these tools are enabled.'),
  fallbackForToolsets: z.array(z.string()).optional().describe('Hidden when these toolsets are enabled.'),
  fallbackForTools: z.array(z.string()).optional().describe('Hidden when these tools are enabled.'),
  config: z.array(skillConfigEntrySchema).optional().describe('Settings stored under skills.config.<key> and injected on load.'),
}).describe('metadata.hermes of the SKILL.md front matter.');

export const skillSpecSchema = withRules(z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lowercase letters, digits, hyphens and underscores')
    .describe(`Skill name as the agent sees it (lowercase, hyphens, underscores; at most ${skillNameMax} characters).`),
  description: z.string().min(1).describe(`One sentence shown in the skills index (at most ${skillDescriptionMax} characters; keep it under ${skillDescriptionAdvised}).`),
  version: z.string().optional(),
  author: z.string().optional(),
  license: z.string().optional(),
  platforms: z.array(z.enum(['macos', 'linux', 'windows'])).optional().describe('Operating systems the skill works on (all when unset).'),
  tags: z.array(z.string()).default([]),
  relatedSkills: z.array(z.string()).default([]),
  requiredEnvironmentVariables: z.array(requiredEnvSchema).default([]).describe('Variables passed through into sandboxes when the skill loads.'),
  hermes: skillHermesMetaSchema.optional(),
  trust: z.enum(['builtin', 'official', 'trusted', 'community']).default('community').describe('Trust level: community skills with injection findings are not offered to agents.'),
  body: z.string().min(1).describe('The SKILL.md body (Markdown, without the front matter).'),
  files: z.array(skillFileSchema).default([]).describe('Extra files loaded on demand (references, templates, scripts, assets).'),
}), [
  { rule: `size(self.name) <= ${skillNameMax}`, message: `name must be at most ${skillNameMax} characters`, check: (s) => s.name.length <= skillNameMax },
  { rule: `size(self.description) <= ${skillDescriptionMax}`, message: `description must be at most ${skillDescriptionMax} characters`, check: (s) => s.description.length <= skillDescriptionMax },
]);
export type SkillSpec = z.infer<typeof skillSpecSchema>;

export const skillStatusSchema = z.object({
  ...baseStatusShape,
  hash: z.string().optional().describe('SHA-256 of the canonical skill content.'),
  version: z.number().int().optional().describe('Content version in Postgres (bumped when the hash changes).'),
  warnings: z.array(z.string()).optional().describe('Advice that does not block the skill (e.g. a long description).'),
  findings: z.array(z.string()).optional().describe('Injection-scan findings in the body or files.'),
});

export const skillSchema = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('Skill'),
  metadata: objectMetaSchema,
  spec: skillSpecSchema,
  status: skillStatusSchema.optional(),
});
export type Skill = z.infer<typeof skillSchema>;
