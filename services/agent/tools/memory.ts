// `memory` (Hermes' arguments: action add | replace | remove, target memory | user, content,
// old_text — a short unique substring of the entry — or operations[] as one atomic batch): the
// agent's bounded notes (MEMORY, shared by all its users) and what it knows about the person it
// is talking to (USER, that person's alone). Writes are durable at once (Postgres, every
// revision kept) while the running session keeps its prompt's frozen snapshot. New text is
// scanned for injection, exfiltration and invisible Unicode ("Blocked"); over the limit is an
// error carrying the current entries (no eviction); after 3 failed memory calls in a turn the
// model is told to stop retrying and answer.
import { z } from 'zod';
import { defineTool, type ToolContext } from './registry.js';
import { unsafeEntry } from '../memory/snapshot.js';
import { applyMemoryOps, usageLine, usedChars, type MemoryOp, type MemoryTarget } from '../memory/entries.js';
import { shortId, stagingFull, type StagingStore } from '../learning/staging.js';
import type { MemoryAccess } from '../memory/access.js';
import type { MemoryScope } from '../memory/store.js';

/** Consecutive failed calls in a turn after which the model is told to stop (SPEC, Hermes). */
const MEMORY_FAILURES_PER_TURN = 3;

const NO_MEMORY_STORE = 'Memory is not available here (no memory store is configured for this worker).';

const op = z.object({
  action: z.enum(['add', 'replace', 'remove']),
  content: z.string().max(20_000).optional().describe('The entry text (add) or the new text (replace)'),
  old_text: z.string().max(20_000).optional().describe('A short substring that identifies exactly one existing entry (replace, remove)'),
}).strict();

const schema = z.object({
  action: z.enum(['add', 'replace', 'remove']).optional().describe('add a new entry, replace the entry containing old_text with content, or remove the entry containing old_text. Omit when giving operations.'),
  target: z.enum(['memory', 'user']).default('memory').describe('memory: your own notes (environment facts, conventions, lessons learned), shared across all users of this agent. user: what you know about the person you are talking to (preferences, role, style).'),
  content: z.string().max(20_000).optional().describe('The entry text (add) or the replacement text (replace)'),
  old_text: z.string().max(20_000).optional().describe('A short unique substring of the entry to replace or remove'),
  operations: z.array(op).max(50).optional().describe('Several add/replace/remove operations on one target, applied all-or-nothing and checked against the limit only at the end (free room and add in one call)'),
}).strict();

const json = (value: unknown): string => JSON.stringify(value);

function scopeOf(access: MemoryAccess, target: MemoryTarget): MemoryScope | undefined {
  if (target === 'memory') return { agentId: access.agentId, target };
  return access.userId ? { agentId: access.agentId, target, userId: access.userId } : undefined;
}

/** A failed call: counted; past the per-turn budget the model is told to stop and answer. */
function failed(access: MemoryAccess, result: Record<string, unknown>): string {
  access.failures += 1;
  if (access.failures <= MEMORY_FAILURES_PER_TURN) return json({ success: false, ...result });
  return json({
    success: false, done: true,
    error: `Memory calls failed ${access.failures} times this turn. Stop retrying memory calls: leave memory as it is and continue with your reply to the user. The fact can be saved in a later turn.`,
  });
}

function operationsOf(args: z.infer<typeof schema>): MemoryOp[] | string {
  if (args.operations?.length) return args.operations;
  if (!args.action) return 'give an action (add, replace or remove) or operations';
  return [{ action: args.action, content: args.content, old_text: args.old_text }];
}

/** Text that must not be stored: a NUL (counted as a failure), or a pattern the scan blocks (Blocked, not counted). */
function refused(access: MemoryAccess, ops: readonly MemoryOp[]): string | undefined {
  for (const [i, o] of ops.entries()) {
    const at = ops.length > 1 ? `operation ${i + 1}: ` : '';
    // Postgres stores no NUL in text, nor (in jsonb) half of a surrogate pair: refused here with a reason, not failed deep in the write.
    const text = `${o.content ?? ''}${o.old_text ?? ''}`;
    if (text.includes('\u0000')) return failed(access, { error: `${at}the text contains a NUL character; leave it out` });
    if (!text.isWellFormed()) return failed(access, { error: `${at}the text contains an unpaired UTF-16 surrogate (half of an emoji or other character); send whole characters` });
    const why = o.action === 'remove' ? undefined : unsafeEntry(o.content ?? '');
    // Refused outright (not a consolidation failure): the text must not enter any future prompt.
    if (why) return json({ success: false, error: `Blocked: ${at}this text was not saved because ${why}. Memory must hold plain facts, never instructions.` });
  }
  return undefined;
}

/** The lines an admin reviews: entries removed (-) and added (+). */
function entriesDiff(before: readonly string[], after: readonly string[]): string {
  const removed = before.filter((e) => !after.includes(e)).map((e) => `- ${e.replace(/\n/g, '\n  ')}`);
  const added = after.filter((e) => !before.includes(e)).map((e) => `+ ${e.replace(/\n/g, '\n  ')}`);
  return [...removed, ...added].join('\n');
}

/** A failed write: why, the matches of an ambiguous old_text, and the store as it is (no eviction: the model consolidates). */
function failedWith(access: MemoryAccess, failure: { error: string; matches?: string[] | undefined; overLimit?: unknown }, entries: readonly string[], limit: number): string {
  const error = failure.overLimit
    ? `${failure.error}, over the limit of ${limit.toLocaleString('en-US')}. Consolidate: replace overlapping entries with shorter ones or remove stale ones (current_entries below), in one operations batch with the new entry.`
    : failure.error;
  return failed(access, {
    error, ...(failure.matches ? { matches: failure.matches } : {}),
    current_entries: entries, usage: `${usedChars(entries).toLocaleString('en-US')}/${limit.toLocaleString('en-US')}`,
  });
}

/** Write approval: the batch is checked against the store now and staged for an admin, not written. */
async function stage(access: MemoryAccess, staging: StagingStore, scope: MemoryScope, ops: readonly MemoryOp[], limit: number): Promise<string> {
  const current = await access.store.read(scope);
  const applied = applyMemoryOps(current.entries, ops, limit);
  if (!applied.ok) return failedWith(access, applied, current.entries, limit);
  access.failures = 0;
  if (!applied.changed) return json({ success: true, done: true, target: scope.target, message: 'Nothing changed (the entry already exists).' });
  const result = await staging.stage({
    agentId: access.agentId, kind: 'memory', target: scope.target, userId: scope.target === 'user' ? scope.userId : null,
    payload: { ops }, diff: entriesDiff(current.entries, applied.entries), sessionId: access.sessionId,
  });
  if ('full' in result) return failed(access, { error: stagingFull('memory', result.full) });
  const id = shortId(result.staged.id);
  return json({
    success: true, done: true, staged: true, pending_id: id, target: scope.target,
    message: `${result.again ? 'This write was staged already' : 'Staged for approval'}: an admin of this agent approves it with /memory approve ${id}; approved memory reaches new conversations. Do not repeat it.`,
  });
}

async function run(access: MemoryAccess, args: z.infer<typeof schema>): Promise<string> {
  const target = args.target;
  const scope = scopeOf(access, target);
  if (!scope) return json({ success: false, error: 'The user store is not available: this conversation has no identified user. Use target "memory" for your own notes.' });
  const ops = operationsOf(args);
  if (typeof ops === 'string') return failed(access, { error: ops });
  const refusal = refused(access, ops);
  if (refusal) return refusal;
  const limit = access.limits[target];
  if (access.approval) return stage(access, access.approval, scope, ops, limit);
  const result = await access.store.write(scope, ops, limit, access.sessionId);
  if (!result.ok) return failedWith(access, result, (await access.store.read(scope)).entries, limit);
  access.failures = 0;
  return json({
    success: true, done: true, target,
    usage: usageLine(result.entries, limit),
    entry_count: result.entries.length,
    message: result.changed ? `Saved (${ops.length} operation${ops.length > 1 ? 's' : ''}).` : 'Nothing changed (the entry already exists).',
    note: 'The write is saved and complete; do not repeat it. Your prompt shows memory as it was when this conversation started.',
  });
}

export const memoryTool = defineTool({
  name: 'memory',
  description: 'Save durable facts to your bounded memory so future conversations know them. target "memory": your own notes — environment facts, project conventions, tool quirks, lessons learned (shared with every user of this agent). target "user": the person you are talking to — preferences, role, communication style (theirs alone). Save what will still matter in a later conversation; never transient task state, one-off details or unverified guesses. When full, replace or remove entries to make room (operations batches several changes in one call). Entries are plain facts, never instructions.',
  toolset: 'memory',
  sideEffect: 'writes',
  schema,
  handler: (args, ctx: ToolContext) => (ctx.memory ? run(ctx.memory, args) : json({ success: false, error: NO_MEMORY_STORE })),
});
