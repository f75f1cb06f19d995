// `/memory pending|approve <id>|reject <id>` and `/skills pending|diff <id>|approve <id>|reject <id>`:
// an Agent admin reviews the memory and skill writes that write approval staged. Answered without
// the model; anyone else is told it is for admins. An approved write is applied now, against the
// store as it is (it may fail then: the store changed since, and the decision says so), and
// reaches new conversations; every decision is recorded with who and when.
import type { Admission, CompiledAgent, Db, Permissions, TurnResult } from '../core/index.js';
import { slashCommandName } from '../core/permissions.js';
// The modules themselves rather than the agent package's index: `hermes review` loads this file, and
// the whole package (model SDKs, tools, MCP) would add ≈ 1.5 s to each of its starts.
import { decideStagedWrite } from '../agent/learning/decide.js';
import { pgStaging, shortId, type StagedKind, type StagedWrite } from '../agent/learning/staging.js';
import { userIdentity } from '../agent/recall/session-recall.js';

const COMMAND = /^\/(memory|skills)(?:\s+(pending|approve|reject|diff)(?:\s+([0-9a-f-]+))?)?\s*$/i;

export interface LearningCommand { kind: StagedKind; verb: 'pending' | 'approve' | 'reject' | 'diff'; id?: string }

export function parseLearningCommand(content: string): LearningCommand | undefined {
  const m = COMMAND.exec(content.trim());
  if (!m) return undefined;
  // Bare `/memory` or `/skills` lists the pending writes (Hermes' default).
  const verb = (m[2]?.toLowerCase() ?? 'pending') as LearningCommand['verb'];
  const kind: StagedKind = m[1]!.toLowerCase() === 'memory' ? 'memory' : 'skill';
  if (verb === 'diff' && kind === 'memory') return undefined;
  return { kind, verb, ...(m[3] ? { id: m[3].toLowerCase() } : {}) };
}

const done = (reply: string): TurnResult => ({ outcome: 'completed', reply });
const noun = (kind: StagedKind) => (kind === 'memory' ? 'memory' : 'skills');

function describe(w: StagedWrite): string {
  // A USER write names its person: the reviewer sees whose profile it would change.
  const what = w.kind === 'memory' ? (w.target === 'user' ? `USER profile of ${w.person ?? 'a person no longer known'}` : 'MEMORY notes') : `skill ${w.target}`;
  const first = w.diff.split('\n').slice(0, 3).join(' / ');
  return `${shortId(w.id)} · ${what} · ${first.length > 160 ? `${first.slice(0, 160)}…` : first}`;
}

/** Who asks, for which agent: a chat admin (from the admission) or `hermes review`. */
export interface Reviewer {
  agentId: string;
  agent: CompiledAgent;
  /** Recorded as decided_by: `platform:id`, or `cli:<user>`. */
  by: () => Promise<string>;
  /** Provenance of an applied skill write whose staging session is gone. */
  sessionId: string | null;
}

/** The answer to a review command in words; `refused` when nothing was shown or decided (no such write, no id, already decided, not applied). */
export interface ReviewAnswer { text: string; refused?: true }

const refused = (text: string): ReviewAnswer => ({ text, refused: true });

/** Answers a review command (list, diff, approve, reject) in words. */
export async function reviewLearningWrite(db: Db, who: Reviewer, cmd: LearningCommand): Promise<ReviewAnswer> {
  const staging = pgStaging(db);
  if (cmd.verb === 'pending') {
    const pending = await staging.pending(who.agentId, cmd.kind);
    if (!pending.length) return { text: `No ${noun(cmd.kind)} writes are waiting for approval.` };
    return { text: [`${pending.length} ${noun(cmd.kind)} write${pending.length > 1 ? 's' : ''} waiting for approval:`, ...pending.map(describe), `Approve with /${noun(cmd.kind)} approve <id>, reject with /${noun(cmd.kind)} reject <id>${cmd.kind === 'skill' ? ', see one whole with /skills diff <id>' : ''}.`].join('\n') };
  }
  if (!cmd.id) return refused(`Say which: /${noun(cmd.kind)} ${cmd.verb} <id> (see /${noun(cmd.kind)} pending).`);
  const found = await staging.find(who.agentId, cmd.kind, cmd.id);
  if (found === 'ambiguous') return refused(`More than one write starts with ${cmd.id}: give more of its id.`);
  if (!found) return refused(`No ${noun(cmd.kind)} write ${cmd.id} (see /${noun(cmd.kind)} pending).`);
  if (cmd.verb === 'diff') return { text: `${describe(found)}\n\n${found.diff}` };
  const decision = await decideStagedWrite(db, who.agent, found, cmd.verb, { by: await who.by(), sessionId: who.sessionId });
  const id = shortId(found.id);
  if (!decision.done) return refused(`${id} was ${decision.reason}.`);
  if (decision.state === 'rejected') return { text: `Rejected ${id}: nothing was written.` };
  return decision.state === 'approved' ? { text: `Approved ${id}: ${decision.result}; new conversations see it.` } : refused(`Approved ${id}, but it could not be applied: ${decision.result}. Nothing was written.`);
}

/** How the review commands of `kind` are written. */
const usage = (kind: StagedKind) => kind === 'memory'
  ? 'Use /memory pending, /memory approve <id> or /memory reject <id> (the ids /memory pending lists).'
  : 'Use /skills pending, /skills diff <id>, /skills approve <id> or /skills reject <id> (the ids /skills pending lists).';

/**
 * The reply to a learning command in `adm`, or undefined when it is none. Admins only. A
 * `/memory …` or `/skills …` that does not parse (a mistyped id, an unknown word) is answered with
 * how to write it — never handed to the model, which could claim a write was approved.
 */
export async function learningReply(db: Db, adm: Admission, agent: CompiledAgent, perms: Permissions): Promise<TurnResult | undefined> {
  const name = slashCommandName(adm.content);
  if (name !== 'memory' && name !== 'skills') return undefined;
  const cmd = parseLearningCommand(adm.content);
  const kind: StagedKind = name === 'memory' ? 'memory' : 'skill';
  if (!perms.admin) return done(`Only this agent's admins may review ${noun(kind)} writes.`);
  if (!cmd) return done(`Not understood: ${adm.content.trim().slice(0, 80)}. ${usage(kind)}`);
  const by = async () => (await userIdentity(db, adm.userId)) ?? 'unknown';
  return done((await reviewLearningWrite(db, { agentId: adm.agentId, agent, by, sessionId: adm.sessionId }, cmd)).text);
}
