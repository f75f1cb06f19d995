// Skill: one procedural-memory document managed by GitOps. The fields are Hermes' SKILL.md front
// matter (camelCased), so an existing Hermes skill folder imports unchanged (`hermes skills import`).
import { z } from 'zod';
import { apiVersion, baseStatusShape, objectMetaSchema, specLimits, withoutNul, withRules } from './common.js';

export const skillNameMax = 64;
export const skillDescriptionMax = 1024;
/** Hermes' guide: the index is injected every session, so descriptions should stay short. */
export const skillDescriptionAdvised = 60;
/** Longest SKILL.md body (characters): what skill_manage writes at most. */
export const skillBodyMax = 100_000;
/** Longest extra file (characters): the whole Skill must fit an etcd object (about 1.5 MB). */
export const skillFileMax = 1_000_000;

const token = z.string().max(specLimits.token);
const tokens = z.array(token).max(64);
const line = z.string().max(specLimits.line);

/**
 * One path segment: a plain name, never `.` or `..` (no lookahead: the apiserver checks the same
 * pattern with Go's RE2), so a file cannot name a place outside its skill folder.
 */
const fileSegment = String.raw`(?:[A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)`;

export const skillFileSchema = z.object({
  path: z.string().max(300).regex(new RegExp(`^(references|templates|scripts|assets)(/${fileSegment})+$`), 'must be under references/, templates/, scripts/ or assets/, in plain path segments (no ., .. or empty ones)')
    .describe('Path inside the skill folder: under references/, templates/, scripts/ or assets/.'),
  content: z.string().max(skillFileMax).describe(`File content (text, at most ${skillFileMax} characters).`),
});

export const requiredEnvSchema = z.object({
  name: z.string().min(1).max(specLimits.envName).describe('Environment variable name.'),
  prompt: line.optional().describe('What to ask the user for.'),
  help: line.optional().describe('Where to get the value.'),
  requiredFor: line.optional().describe('Which part of the skill needs it.'),
});

export const skillConfigEntrySchema = z.object({
  key: z.string().min(1).max(specLimits.token),
  description: line.optional(),
  default: line.optional(),
  prompt: line.optional(),
});

export const skillHermesMetaSchema = z.object({
  tags: tokens.optional(),
  relatedSkills: tokens.optional(),
  requiresToolsets: tokens.optional().describe('Hidden unless these toolsets are enabled.'),
  requiresTools: tokens.optional().describe('Hidden unless these tools are enabled.'),
  fallbackForToolsets: tokens.optional().describe('Hidden when these toolsets are enabled.'),
  fallbackForTools: tokens.optional().describe('Hidden when these tools are enabled.'),
  config: z.array(skillConfigEntrySchema).max(64).optional().describe('Settings stored under skills.config.<key> and injected on load.'),
}).describe('metadata.hermes of the SKILL.md front matter.');

export const skillSpecSchema = withoutNul(withRules(z.object({
  // A looser maxLength, as metadata only: the apiserver skips the CEL rules of an object whose schema
  // already failed, so up to this bound the rule below says the limit in words (hermes dev says it once).
  name: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lowercase letters, digits, hyphens and underscores').meta({ maxLength: specLimits.token })
    .describe(`Skill name as the agent sees it (lowercase, hyphens, underscores; at most ${skillNameMax} characters).`),
  description: z.string().min(1).meta({ maxLength: 4 * skillDescriptionMax }).describe(`One sentence shown in the skills index (at most ${skillDescriptionMax} characters; keep it under ${skillDescriptionAdvised}).`),
  version: z.string().max(64).optional(),
  author: line.optional(),
  license: line.optional(),
  platforms: z.array(z.enum(['macos', 'linux', 'windows'])).max(3).optional().describe('Operating systems the skill works on (all when unset).'),
  tags: tokens.default([]),
  relatedSkills: tokens.default([]),
  requiredEnvironmentVariables: z.array(requiredEnvSchema).max(64).default([]).describe('Variables passed through into sandboxes when the skill loads.'),
  hermes: skillHermesMetaSchema.optional(),
  trust: z.enum(['builtin', 'official', 'trusted', 'community']).default('community').describe('Trust level: community skills with injection findings are not offered to agents.'),
  body: z.string().min(1).max(skillBodyMax).describe(`The SKILL.md body (Markdown, without the front matter; at most ${skillBodyMax} characters).`),
  files: z.array(skillFileSchema).max(256).default([]).describe('Extra files loaded on demand (references, templates, scripts, assets).'),
}), [
  { rule: `size(self.name) <= ${skillNameMax}`, message: `name must be at most ${skillNameMax} characters`, check: (s) => [...s.name].length <= skillNameMax },
  { rule: `size(self.description) <= ${skillDescriptionMax}`, message: `description must be at most ${skillDescriptionMax} characters`, check: (s) => [...s.description].length <= skillDescriptionMax }, // code points, as CEL's size() and Hermes count
]));
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
