// `/curator status|run|pin <skill>|unpin <skill>|restore <skill>`: an Agent admin looks after the
// skills the agent learned (the curator: stale after 14 days unused, archived after 30, pinned
// exempt, archive never deletes). Answered without the model; anyone else is told it is for admins.
import type { Admission, CompiledAgent, Db, Permissions, TurnResult } from '../core/index.js';
import { slashCommandName } from '../core/permissions.js';
import { ARCHIVE_DAYS, STALE_DAYS, curate, curatedSkills, runCurator } from '../agent/index.js';

const COMMAND = /^\/curator(?:\s+(status|run|pin|unpin|restore))?(?:\s+([a-z0-9][a-z0-9_-]{0,63}))?\s*$/i;
const USAGE = 'Use /curator status, /curator run, or /curator pin|unpin|restore <skill> (a learned skill\'s name).';

const done = (reply: string): TurnResult => ({ outcome: 'completed', reply });
const day = (d: Date | null) => (d ? d.toISOString().slice(0, 10) : 'never');

async function status(db: Db, agentId: string): Promise<string> {
  const skills = await curatedSkills(db, agentId);
  if (!skills.length) return 'This agent has learned no skills yet.';
  return [
    `Learned skills (stale after ${STALE_DAYS} days unused, archived after ${ARCHIVE_DAYS}; pinned ones are exempt):`,
    ...skills.map((s) => `- ${s.name}: ${s.state}${s.pinned ? ', pinned' : ''}, last used ${day(s.lastUsedAt)}`),
  ].join('\n');
}

/** The reply to a /curator command in `adm`, or undefined when it is none. Admins only. */
export async function curatorReply(db: Db, adm: Admission, agent: CompiledAgent, perms: Permissions, now = new Date()): Promise<TurnResult | undefined> {
  if (slashCommandName(adm.content) !== 'curator') return undefined;
  if (!perms.admin) return done('Only this agent\'s admins may run the curator.');
  // A /curator that does not parse (an unknown word, a name that is no skill name) gets how to write it, not the model.
  const m = COMMAND.exec(adm.content.trim());
  if (!m || (!m[1] && m[2])) return done(`Not understood: ${adm.content.trim().slice(0, 80)}. ${USAGE}`);
  const verb = (m[1] ?? 'status').toLowerCase();
  if (verb === 'status') return done(await status(db, adm.agentId));
  if (verb === 'run') {
    const r = await runCurator(db, now, adm.agentId);
    return done(`Curator run: ${r.stale.length ? `stale now: ${r.stale.join(', ')}` : 'nothing became stale'}; ${r.archived.length ? `archived: ${r.archived.join(', ')}` : 'nothing archived'}.`);
  }
  return done(await onSkill(db, adm.agentId, verb as SkillVerb, m[2], now));
}

type SkillVerb = 'pin' | 'unpin' | 'restore';

/** `/curator pin|unpin|restore <skill>`, in words. */
async function onSkill(db: Db, agentId: string, verb: SkillVerb, name: string | undefined, now: Date): Promise<string> {
  if (!name) return `Say which skill: /curator ${verb} <skill>.`;
  const before = await curate(db, agentId, name, verb, now);
  if (!before) return `This agent has no learned skill named ${name}.`;
  if (verb === 'restore' && before !== 'archived') return `${name} is not archived (it is ${before}): it is offered already.`;
  return verb === 'restore' ? `Restored ${name}: it is offered again.` : verb === 'pin' ? `Pinned ${name}: the curator and the agent leave it as it is.` : `Unpinned ${name}.`;
}
