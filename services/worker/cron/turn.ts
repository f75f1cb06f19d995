// What makes a cron turn different (SPEC "Cron"): nobody is there, so no tools that talk to a
// person or schedule more work (messaging, clarify, cron), no project context files in the prompt
// (the run is not about a checkout), and the CronJob's skills loaded into the request in order.
// The rest is handled where the platform is checked: approvals deny, the tool-loop guard halts,
// no background review, and a run cut off by its worker's death settles `interrupted`.
import type { Admission, CompiledAgent } from '../../core/index.js';
import type { CatalogSkill, ChatMessage, Tool } from '../../agent/index.js';

export const CRON_PLATFORM = 'cron';
/** Toolsets a cron turn is never offered. */
export const CRON_EXCLUDED_TOOLSETS: readonly string[] = ['messaging', 'clarify', 'cron'];
/** Tools a cron turn is never offered, whatever toolset carries them. */
export const CRON_EXCLUDED_TOOLS: readonly string[] = ['send_message', 'clarify', 'cronjob'];

export const isCronTurn = (adm: Pick<Admission, 'platform'>) => adm.platform === CRON_PLATFORM;

/** The toolsets and tools of a cron turn: the excluded ones removed. */
export const cronToolsets = (toolsets: string[]): string[] => toolsets.filter((t) => !CRON_EXCLUDED_TOOLSETS.includes(t));
export const cronTools = (tools: Tool[]): Tool[] => tools.filter((t) => !CRON_EXCLUDED_TOOLS.includes(t.name) && !CRON_EXCLUDED_TOOLSETS.includes(t.toolset));

/** The agent as a cron turn's prompt sees it: without project context files. */
export const cronPromptAgent = (agent: CompiledAgent): CompiledAgent => ({ ...agent, contextFiles: undefined });

/** The skills a CronJob names (its reply target carries them), in order. */
export function cronSkillNames(adm: Pick<Admission, 'replyTarget'>): string[] {
  const t = adm.replyTarget as { kind?: string; skills?: unknown } | null;
  return t?.kind === 'cron' && Array.isArray(t.skills) ? t.skills.filter((s): s is string => typeof s === 'string') : [];
}

/** The request the model gets: each skill's instructions, in order, then the CronJob's prompt. */
export function cronSkillRequest(prompt: string, names: readonly string[], offered: readonly CatalogSkill[]): { text: string; used: CatalogSkill[] } {
  const used: CatalogSkill[] = [];
  const parts: string[] = [];
  for (const name of names) {
    const skill = offered.find((s) => s.name === name);
    if (!skill) {
      parts.push(`[The scheduled task asks for the skill "${name}", which this agent does not offer; do without it.]`);
      continue;
    }
    used.push(skill);
    const files = skill.files.length ? `\n(Files you can load with skill_view("${skill.name}", file_path): ${skill.files.map((f) => f.path).join(', ')}.)` : '';
    parts.push(`[Skill "${skill.name}" is loaded for this scheduled task. Follow its instructions.]\n\n${skill.body.trim()}${files}`);
  }
  return { text: [...parts, `Scheduled task: ${prompt}`].join('\n\n'), used };
}

/** The history with the last user message (the prompt) replaced by the skill-loaded request. */
export function withCronSkills(history: ChatMessage[], adm: Admission, offered: readonly CatalogSkill[]): { history: ChatMessage[]; used: CatalogSkill[] } {
  const names = cronSkillNames(adm);
  const last = history.at(-1);
  if (names.length === 0 || last?.role !== 'user') return { history, used: [] };
  const { text, used } = cronSkillRequest(adm.content, names, offered);
  return { history: [...history.slice(0, -1), { ...last, content: text }], used };
}
