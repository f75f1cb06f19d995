// `/<skill-name> [request]`: every offered skill is also a chat command. The turn's request to the
// model carries the skill's instructions and the user's words after the command; the stored
// transcript keeps what the user typed. Built-in commands are handled before this is asked.
import type { CatalogSkill } from './catalog.js';

const COMMAND = /^\/([a-z0-9][a-z0-9_-]{0,63})(?:\s+([\s\S]*))?$/;

/** The skill `content` invokes and the request after it, or undefined when it invokes none of `offered`. */
export function skillInvocation(content: string, offered: readonly CatalogSkill[]): { skill: CatalogSkill; request: string } | undefined {
  const m = COMMAND.exec(content.trim());
  if (!m) return undefined;
  const skill = offered.find((s) => s.name === m[1]);
  return skill ? { skill, request: (m[2] ?? '').trim() } : undefined;
}

/** What the model gets in place of the command line. */
export function skillRequestText(inv: { skill: CatalogSkill; request: string }): string {
  const files = inv.skill.files.length ? `\n\n(This skill has files you can load with skill_view("${inv.skill.name}", file_path): ${inv.skill.files.map((f) => f.path).join(', ')}.)` : '';
  return [
    `[The user started the skill "${inv.skill.name}" with /${inv.skill.name}. Follow its instructions below for the request that follows them.]`,
    '',
    inv.skill.body.trim() + files,
    '',
    `User request: ${inv.request || '(none given: run the skill as written, and ask for what it needs)'}`,
  ].join('\n');
}
