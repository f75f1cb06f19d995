// `skill_manage` (Hermes' arguments: action create | edit | patch | delete | write_file |
// remove_file, name, content — a whole SKILL.md —, old_string / new_string / replace_all,
// file_path, file_content): the agent writes its own procedural memory. Only its learned skills
// change (Postgres, every version kept with its provenance); a GitOps-owned, bundled or pinned
// skill is never modified. New text passes the same scan as GitOps skills ("Blocked").
import { z } from 'zod';
import { defineTool, type ToolContext } from './registry.js';
import type { SkillManageAccess } from '../skills/access.js';
import type { LearnedSkill, LearnedState } from '../skills/learned.js';
import { scanContent } from '../skills/scan.js';
import { skillFieldsFrom, skillMdText, splitSkillMd } from '../skills/skill-md.js';
import { shortId, stagingFull, type StagingStore } from '../learning/staging.js';
import { charCount } from '../memory/entries.js';

const MAX_CHARS = 100_000;
/**
 * Bounds of what the agent keeps (a model told by any chat user writes here, and every session's
 * prompt carries the index of its skills): live learned skills per agent, files per skill (as a
 * Skill resource), and characters per skill, body and files together (every version is kept whole).
 */
export const MAX_LEARNED_SKILLS = 200;
export const MAX_SKILL_FILES = 256;
export const MAX_SKILL_CHARS = 1_000_000;
const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const FILE_DIRS = new Set(['references', 'templates', 'scripts', 'assets']);
/** A file path of a skill: under one of Hermes' folders, plain segments only (no ., .., empty or absolute). */
const validFilePath = (path: string): boolean => {
  const parts = path.split('/');
  return parts.length >= 2 && FILE_DIRS.has(parts[0]!) && parts.every((p) => /^[A-Za-z0-9._-]+$/.test(p) && p !== '.' && p !== '..');
};

const schema = z.object({
  action: z.enum(['create', 'edit', 'patch', 'delete', 'write_file', 'remove_file']),
  name: z.string().min(1).max(64).describe('Skill name: lowercase letters, digits, hyphens, underscores (at most 64)'),
  content: z.string().max(MAX_CHARS).optional().describe('The whole SKILL.md (YAML front matter with name and description, then the body): create and edit. For edit, start from the skill_md that skill_view gives (the whole SKILL.md, front matter included), so nothing in it is lost.'),
  old_string: z.string().max(MAX_CHARS).optional().describe('patch: the exact text to find (unique unless replace_all), in SKILL.md or in file_path'),
  new_string: z.string().max(MAX_CHARS).optional().describe('patch: the replacement (may be empty)'),
  replace_all: z.boolean().optional().describe('patch: replace every occurrence'),
  file_path: z.string().max(300).optional().describe('write_file / remove_file / patch: a file under references/, templates/, scripts/ or assets/'),
  file_content: z.string().max(MAX_CHARS).optional().describe('write_file: the file\'s content'),
}).strict();

export type SkillManageArgs = z.infer<typeof schema>;
type Args = SkillManageArgs;
type Change = LearnedSkill | null | string;

const json = (value: unknown): string => JSON.stringify(value);

/** The skill a whole SKILL.md describes, or why it cannot be one. */
function parseSkill(name: string, content: string | undefined, files: LearnedSkill['files']): LearnedSkill | string {
  if (!content) return 'content (the whole SKILL.md) is required';
  let parsed;
  let fields: LearnedSkill;
  try {
    parsed = splitSkillMd(content);
    fields = skillFieldsFrom(parsed.front, parsed.body, files) as unknown as LearnedSkill;
  } catch (err) {
    return (err as Error).message;
  }
  if (parsed.front.name !== undefined && fields.name !== name) return `the front matter names "${fields.name}", not "${name}"`;
  // Characters as Hermes counts them (code points): an emoji is one, not two.
  if (!fields.description || charCount(fields.description) > 1_024) return 'the front matter needs a description (one sentence, at most 1024 characters; the index shows it every session)';
  if (!fields.body.trim()) return 'the skill needs a body after the front matter';
  return { ...fields, name };
}

/** Why `skill` must not be stored (the scan GitOps skills pass), or undefined. */
function blocked(skill: Pick<LearnedSkill, 'description' | 'body' | 'files'>): string | undefined {
  const findings = scanContent([{ file: 'SKILL.md', text: `${skill.description}\n${skill.body}` }, ...skill.files.map((f) => ({ file: f.path, text: f.content }))]);
  return findings.length ? `Blocked: ${findings.map((f) => f.message).join('; ')}` : undefined;
}

function patched(text: string, args: Args): { text: string } | { error: string } {
  const old = args.old_string ?? '';
  if (!old) return { error: 'old_string is required for patch' };
  const count = text.split(old).length - 1;
  if (count === 0) return { error: 'old_string was not found' };
  if (count > 1 && !args.replace_all) return { error: `old_string is ambiguous: it occurs ${count} times (give more context, or replace_all: true)` };
  return { text: args.replace_all ? text.split(old).join(args.new_string ?? '') : text.replace(old, () => args.new_string ?? '') };
}

/** The next content of an existing learned skill for `args`, or a refusal. */
function changeExisting(skill: LearnedSkill, args: Args): Change {
  switch (args.action) {
    case 'edit':
      return parseSkill(args.name, args.content, skill.files);
    case 'delete':
      return null;
    case 'write_file': {
      if (!args.file_path || !validFilePath(args.file_path)) return 'file_path must be under references/, templates/, scripts/ or assets/ (no .. or absolute paths)';
      if (args.file_content === undefined) return 'file_content is required for write_file';
      return { ...skill, files: [...skill.files.filter((f) => f.path !== args.file_path), { path: args.file_path, content: args.file_content }].sort((a, b) => a.path.localeCompare(b.path)) };
    }
    case 'remove_file':
      return skill.files.some((f) => f.path === args.file_path) ? { ...skill, files: skill.files.filter((f) => f.path !== args.file_path) } : `"${args.name}" has no file "${args.file_path ?? ''}"`;
    default:
      return patchSkill(skill, args);
  }
}

/** patch: one exact replacement in SKILL.md's body or in file_path. */
function patchSkill(skill: LearnedSkill, args: Args): Change {
  const file = args.file_path ? skill.files.find((f) => f.path === args.file_path) : undefined;
  if (args.file_path && !file) return `"${args.name}" has no file "${args.file_path}"`;
  const result = patched(file ? file.content : skill.body, args);
  if ('error' in result) return result.error;
  return file ? { ...skill, files: skill.files.map((f) => (f === file ? { ...f, content: result.text } : f)) } : { ...skill, body: result.text };
}

function changeFor(state: LearnedState, args: Args): Change {
  if (state.pinned) return `"${args.name}" is pinned: it is not changed by the agent`;
  if (args.action === 'create') {
    if (state.skill) return `"${args.name}" exists already: use edit or patch`;
    if (state.liveSkills >= MAX_LEARNED_SKILLS) return `You have ${state.liveSkills} learned skills, the most an agent keeps (${MAX_LEARNED_SKILLS}): improve one that fits with edit or patch, or delete one you no longer need first`;
    return parseSkill(args.name, args.content, []);
  }
  if (!state.skill) return `You have no learned skill named "${args.name}" (create it first)`;
  return changeExisting(state.skill, args);
}

/** Refusals that need no store read: a bad name, or a name owned by a GitOps or bundled skill. */
async function precheck(access: SkillManageAccess, args: Args): Promise<string | undefined> {
  if (!NAME.test(args.name)) return 'name must be lowercase letters, digits, hyphens and underscores, at most 64 characters';
  // Another source's skill of this name exists (GitOps or bundled): never the agent's to change.
  const owner = (await access.all()).find((s) => s.name === args.name && s.source !== 'learned');
  return owner ? `"${args.name}" is a ${owner.source === 'gitops' ? 'GitOps-managed' : 'bundled'} skill: the agent never modifies it. Create a learned skill under another name.` : undefined;
}

const skillChars = (skill: LearnedSkill | undefined): number => (skill ? skill.body.length + skill.files.reduce((n, f) => n + f.content.length, 0) : 0);

/** Why `next` is too big to keep, or undefined (a change that shrinks a skill over a bound is let through). */
function oversized(next: LearnedSkill, before: LearnedSkill | undefined): string | undefined {
  if (next.files.length > MAX_SKILL_FILES && next.files.length > (before?.files.length ?? 0)) return `a skill has at most ${MAX_SKILL_FILES} files; remove_file one first`;
  const chars = skillChars(next);
  return chars > MAX_SKILL_CHARS && chars > skillChars(before) ? `the skill would hold ${chars} characters (body and files); a skill holds at most ${MAX_SKILL_CHARS}: keep its files shorter` : undefined;
}

/** The next content for `args` from `state`, bounded and scanned; or why not. */
function planned(state: LearnedState, args: Args): Change {
  const next = changeFor(state, args);
  if (typeof next === 'string' || next === null) return next;
  return oversized(next, state.skill) ?? blocked(next) ?? next;
}

/** Applies `args` to the agent's learned skills now (also how an approved staged write is applied). */
export async function manageSkill(access: SkillManageAccess, args: Args): Promise<{ ok: true; version: number } | { ok: false; error: string }> {
  const refusal = await precheck(access, args);
  if (refusal) return { ok: false, error: refusal };
  return access.store.change(access.agentId, args.name, access.sessionId, (state) => planned(state, args));
}

/** What an admin reviews for a staged skill write. */
function skillDiff(before: LearnedSkill | undefined, after: LearnedSkill | null, args: Args): string {
  if (after === null) return `- delete skill ${args.name}`;
  const lines = (text: string, mark: string) => text.split('\n').map((l) => `${mark} ${l}`);
  if (args.action === 'patch') return [...lines(args.old_string ?? '', '-'), ...lines(args.new_string ?? '', '+')].join('\n');
  if (args.action === 'write_file') return [`+ file ${args.file_path ?? ''}:`, ...lines(args.file_content ?? '', '+')].join('\n');
  if (args.action === 'remove_file') return `- file ${args.file_path ?? ''}`;
  return [...(before ? lines(skillMdText(before), '-') : []), ...lines(skillMdText(after), '+')].join('\n');
}

async function stageSkill(access: SkillManageAccess, staging: StagingStore, args: Args): Promise<string> {
  const refusal = await precheck(access, args);
  if (refusal) return json({ success: false, error: refusal });
  const state = await access.store.read(access.agentId, args.name);
  const next = planned(state, args);
  if (typeof next === 'string') return json({ success: false, error: next });
  const result = await staging.stage({ agentId: access.agentId, kind: 'skill', target: args.name, userId: null, payload: { args }, diff: skillDiff(state.skill, next, args), sessionId: access.sessionId });
  if ('full' in result) return json({ success: false, error: stagingFull('skill', result.full) });
  const id = shortId(result.staged.id);
  return json({ success: true, staged: true, pending_id: id, name: args.name, message: `${result.again ? 'This write was staged already' : 'Staged for approval'}: an admin of this agent reviews it with /skills diff ${id} and approves it with /skills approve ${id}. Do not repeat it.` });
}

async function run(access: SkillManageAccess, args: Args): Promise<string> {
  if (access.approval) return stageSkill(access, access.approval, args);
  const written = await manageSkill(access, args);
  if (!written.ok) return json({ success: false, error: written.error });
  return json({ success: true, name: args.name, action: args.action, version: written.version, message: args.action === 'delete' ? `Deleted "${args.name}" (earlier versions are kept).` : `Saved "${args.name}"; new conversations see it in the skills index.` });
}

export const skillManageTool = defineTool({
  name: 'skill_manage',
  description: 'Create and maintain your own skills (procedural memory): after a task that took many steps, needed a recovery from errors, or was corrected by the user, save the working procedure so later conversations can follow it. Actions: create (a whole SKILL.md with name and description front matter), edit (rewrite the whole SKILL.md, starting from the skill_md that skill_view gives), patch (replace one exact string — prefer it for small fixes), delete, write_file / remove_file (files under references/, templates/, scripts/, assets/). Good skills: when to use, numbered steps with exact commands, pitfalls, how to verify. Never store one-off task details, transient failures or unverified guesses. GitOps-managed and bundled skills cannot be changed.',
  toolset: 'skills',
  sideEffect: 'writes',
  postgresArguments: true,
  schema,
  handler: (args, ctx: ToolContext) => (ctx.skills?.manage ? run(ctx.skills.manage, args) : json({ success: false, error: 'Writing skills is not available here.' })),
});
