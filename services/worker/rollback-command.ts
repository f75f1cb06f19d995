// `/rollback` lists the workspace's checkpoints, `/rollback N` restores the N-th newest (Hermes'
// command). Answered by the worker without a model call; the restore runs in the session's
// sandbox like every other workspace change, and is itself undoable (`/rollback 1`).
import { parseCommand, type TurnResult } from '../core/index.js';
import { Checkpoints, CheckpointError, type Checkpoint, type RestoreResult } from '../agent/index.js';
import type { SessionSandbox } from '../sandbox/index.js';

/** The argument of a `/rollback` ('' for none), read as the gateway reads commands; undefined for any other message. */
function rollbackArgs(content: string): string | undefined {
  const c = parseCommand(content);
  return c?.name === 'rollback' ? c.args : undefined;
}

export const isRollbackCommand = (content: string) => rollbackArgs(content) !== undefined;

const line = (c: Checkpoint, i: number) => `${i + 1}. ${c.id}  ${c.at}  ${c.reason}`;

function listReply(list: Checkpoint[]): string {
  if (!list.length) return 'No checkpoints yet: one is taken before write_file or patch changes the workspace.';
  return ['Checkpoints, newest first:', ...list.map(line), 'Send /rollback N to restore one (the current files become checkpoint 1, so it can be undone).'].join('\n');
}

function restoreReply(n: number, r: RestoreResult): string {
  if (!r.restored) return r.available ? `There is no checkpoint ${n}: the workspace has ${r.available}. Send /rollback to list them.` : 'No checkpoints yet: nothing to roll back.';
  const files = r.changes.length ? r.changes.map((c) => `${c.change} ${c.path}`).join('; ') : 'no file differed';
  return `Restored checkpoint ${n} (${r.restored.id}, ${r.restored.reason}${r.restored.at ? `, ${r.restored.at}` : ''}). Files: ${files}. /rollback 1 undoes this.`;
}

/** The reply to a `/rollback` turn, or undefined when the message is something else. */
export async function rollbackReply(content: string, sandbox: SessionSandbox | undefined, signal: AbortSignal): Promise<TurnResult | undefined> {
  const args = rollbackArgs(content);
  if (args === undefined) return undefined;
  if (!sandbox) return { outcome: 'completed', reply: 'This agent has no sandbox (its Profile enables neither the terminal nor the file toolset): there are no checkpoints.' };
  const arg = args || undefined;
  if (arg !== undefined && !/^[0-9]{1,5}$/.test(arg)) return { outcome: 'completed', reply: `/rollback takes a checkpoint number (1 = the newest), got "${arg.slice(0, 40)}". Send /rollback to list them.` };
  const checkpoints = new Checkpoints(sandbox);
  try {
    if (arg === undefined) return { outcome: 'completed', reply: listReply(await checkpoints.list(signal)) };
    const n = Number(arg);
    if (n < 1) return { outcome: 'completed', reply: 'Checkpoint numbers start at 1 (the newest). Send /rollback to list them.' };
    return { outcome: 'completed', reply: restoreReply(n, await checkpoints.restore(n, signal)) };
  } catch (err) {
    if (err instanceof CheckpointError) return { outcome: 'completed', reply: `The rollback did not complete: ${err.message}. Send /rollback to see the checkpoints, then try again.`, error: err.message };
    throw err;
  }
}
