// Deciding a staged write (write approval), wherever the decision comes from — chat (/memory,
// /skills), `hermes review`, the admin API: a rejection writes nothing; an approval applies the
// write now, against the store as it is (it fails, and is recorded `failed`, if it no longer
// applies). Either way the decision is recorded with who made it; only a pending write is decided.
// The decision and the write it applies are one transaction, with the staged row locked first:
// two admins approving at once (chat and the admin API) apply it once — the second waits, then
// finds it decided — and a crash between the two leaves neither.
import type { CompiledAgent, Db, Sql } from '../../core/index.js';
import { memoryLimits } from '../memory/access.js';
import type { MemoryOp } from '../memory/entries.js';
import { pgMemoryStore } from '../memory/store.js';
import { readSkillCatalog } from '../skills/catalog.js';
import { pgLearnedSkills } from '../skills/learned.js';
import { manageSkill, type SkillManageArgs } from '../tools/skill-manage.js';
import { pgStaging, type StagedWrite } from './staging.js';

export type Decision =
  | { done: true; state: 'approved' | 'rejected' | 'failed'; result: string }
  | { done: false; reason: string };

type TxDb = Pick<Db, 'pool' | 'tx'>;

/** The stores' view of one open transaction: their statements, and their own transactions, run inside `sql`. */
const within = (sql: Sql): TxDb => ({ pool: sql as unknown as Db['pool'], tx: (fn) => fn(sql) });

/** Applies an approved write; its result in words. */
async function apply(db: TxDb, agent: CompiledAgent, w: StagedWrite, fallbackSession: string | null): Promise<{ ok: boolean; result: string }> {
  if (w.kind === 'memory') {
    const ops = (w.payload as { ops: MemoryOp[] }).ops;
    const scope = w.target === 'user' ? { agentId: w.agentId, target: 'user' as const, userId: w.userId ?? '' } : { agentId: w.agentId, target: 'memory' as const };
    const written = await pgMemoryStore(db).write(scope, ops, memoryLimits(agent)[w.target === 'user' ? 'user' : 'memory'], w.sourceSessionId);
    return written.ok ? { ok: true, result: `applied as revision ${written.revision}` } : { ok: false, result: written.error };
  }
  const args = (w.payload as { args: SkillManageArgs }).args;
  const written = await manageSkill({
    store: pgLearnedSkills(db), agentId: w.agentId, sessionId: w.sourceSessionId ?? fallbackSession, all: () => readSkillCatalog(db, w.agentId, agent),
  }, args);
  return written.ok ? { ok: true, result: `applied as version ${written.version}` } : { ok: false, result: written.error };
}

/** Who decides: recorded as decided_by; `sessionId` is the provenance of an applied skill write whose staging session is gone. */
export interface Decider { by: string; sessionId?: string | null }

const alreadyDecided = (state: string, decidedBy: string | null): Decision => ({ done: false, reason: `already ${state}${decidedBy ? ` by ${decidedBy}` : ''}` });

/** Approves or rejects `w`. */
export async function decideStagedWrite(db: Pick<Db, 'tx'>, agent: CompiledAgent, w: StagedWrite, verb: 'approve' | 'reject', who: Decider): Promise<Decision> {
  const { by, sessionId = null } = who;
  if (w.state !== 'pending') return alreadyDecided(w.state, w.decidedBy);
  return db.tx(async (sql): Promise<Decision> => {
    // The row as it is now, held until this decision commits: a concurrent decider waits here, then sees it decided.
    const { rows: [now] } = await sql.query<{ state: string; decidedBy: string | null }>(`SELECT state, decided_by AS "decidedBy" FROM learning_writes WHERE id = $1 FOR UPDATE`, [w.id]);
    if (!now) return { done: false, reason: 'it no longer exists' };
    if (now.state !== 'pending') return alreadyDecided(now.state, now.decidedBy);
    const staging = pgStaging(within(sql));
    if (verb === 'reject') {
      await staging.decide(w.id, 'rejected', by, 'rejected');
      return { done: true, state: 'rejected', result: 'nothing was written' };
    }
    const applied = await apply(within(sql), agent, w, sessionId);
    await staging.decide(w.id, applied.ok ? 'approved' : 'failed', by, applied.result);
    return { done: true, state: applied.ok ? 'approved' : 'failed', result: applied.result };
  });
}
