// `/retry` and `/discard`: what a user does with a turn that was interrupted. SPEC: only a human
// clears `unknown` (the turn may already have had effects, so it is never re-run by itself).
//  - `/discard` drops the session's unknown turns.
//  - `/retry` runs the latest unknown turn again as this turn — or, with none, the last message
//    (Hermes' /retry re-sends the last user message).
// The model sees the transcript as it is (with "effect UNKNOWN" for calls that never reported)
// and the retried request in place of the "/retry" line.
import { commandWord, discardUnknown, parseCommand, takeUnknownForRetry, type Admission, type Db, type Lease, type TurnResult } from '../core/index.js';

/** `retry`, `discard`, or undefined. Read as the gateway reads commands: text after the word is ignored (Hermes' commands take none). */
function recoveryName(content: string): 'retry' | 'discard' | undefined {
  const name = parseCommand(content)?.name;
  return name === 'retry' || name === 'discard' ? name : undefined;
}

/** The one-line reply of a `/retry` with nothing to run (not conversation). */
export const NOTHING_TO_RETRY = 'Nothing to retry yet.';

export const isRecoveryCommand = (content: string) => recoveryName(content) !== undefined;

/** What to do with a recovery command: a reply now, or the request to run as this turn. */
export type Recovery = { reply: TurnResult } | { rerun: string; notice?: string };

/**
 * The latest request of the conversation (a stored user line that is no command: an earlier
 * `/retry`'s re-run counts, under that `/retry`), recorded as what this `/retry` re-runs
 * (`resume_of`): the attempt it replaces then leaves the conversation (turn-context.ts).
 */
async function lastUserRequest(db: Db, adm: Admission): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ content: string }>(
    `WITH last AS (
       SELECT m.content, m.admission_id FROM messages m
       WHERE m.session_id = $1 AND m.role = 'user' AND m.admission_id IS NOT NULL AND m.admission_id <> $2 AND m.content !~ '^\\s*/'
       ORDER BY m.seq DESC LIMIT 1)
     UPDATE admissions a SET resume_of = last.admission_id FROM last WHERE a.id = $2
     RETURNING last.content`,
    [adm.sessionId, adm.id],
  );
  return rows[0]?.content;
}

export async function recoveryCommand(db: Db, lease: Lease, adm: Admission): Promise<Recovery | undefined> {
  const name = recoveryName(adm.content);
  if (name === 'discard') {
    const n = await discardUnknown(db, lease, adm.id);
    const reply = n === 0 ? 'Nothing to discard: no interrupted turn is waiting.' : n === 1 ? 'Discarded the interrupted turn; it will not be run.' : `Discarded ${n} interrupted turns; they will not be run.`;
    return { reply: { outcome: 'completed', reply } };
  }
  if (name !== 'retry') return undefined;
  const taken = await takeUnknownForRetry(db, lease, adm.id);
  if (taken) {
    if (!taken.remaining) return { rerun: taken.content };
    return { rerun: taken.content, notice: `${taken.remaining} more interrupted turn(s) are waiting: send ${commandWord(adm.platform, 'retry')} or ${commandWord(adm.platform, 'discard')} for them.` };
  }
  const last = await lastUserRequest(db, adm);
  if (last === undefined) return { reply: { outcome: 'completed', reply: NOTHING_TO_RETRY } };
  return { rerun: last };
}
