// Hermes' bounded memory as pure functions over a list of entries: add / replace / remove by a
// unique substring, a batch applied all-or-nothing and checked against the limit only in its
// final state, the size counted in characters with the entries joined by "\n§\n". No eviction:
// over the limit is an error that carries the current entries, so the model consolidates.
// The store (store.ts) runs these under a lock; the tool (tools/memory.ts) words the results.

export type MemoryTarget = 'memory' | 'user';
export type MemoryAction = 'add' | 'replace' | 'remove';

export interface MemoryOp {
  action: MemoryAction;
  content?: string | undefined;
  old_text?: string | undefined;
}

/** Entries are joined by this when stored, counted and shown (Hermes' delimiter). */
export const ENTRY_DELIMITER = '\n§\n';

/**
 * Characters of `text` as Hermes counts them (Python's len: code points). A string's `length`
 * counts UTF-16 units, so an emoji or a rare CJK ideograph would count twice against the limit.
 */
export function charCount(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

/** Characters the entries take as stored. */
export const usedChars = (entries: readonly string[]): number => (entries.length ? charCount(entries.join(ENTRY_DELIMITER)) : 0);

export type ApplyResult =
  | { ok: true; entries: string[]; changed: boolean }
  | { ok: false; error: string; overLimit?: { chars: number }; matches?: string[] };

/** The first `width` characters (never half of a surrogate pair). */
const preview = (entry: string, width = 80): string => (charCount(entry) > width ? `${Array.from(entry).slice(0, width).join('')}...` : entry);

/** The index of the one entry containing `oldText` (identical duplicates count as one), or why not. */
function findOne(entries: readonly string[], oldText: string): { index: number } | { error: string; matches?: string[] } {
  const hits = entries.flatMap((e, i) => (e.includes(oldText) ? [i] : []));
  if (hits.length === 0) return { error: `no entry matched '${oldText}'` };
  const distinct = new Set(hits.map((i) => entries[i] as string));
  if (distinct.size > 1) return { error: `'${oldText}' matched ${distinct.size} different entries; be more specific`, matches: [...distinct].map((e) => preview(e)) };
  return { index: hits[0] as number };
}

/** One operation on `working` (mutated); an error string when it cannot apply. */
function applyOne(working: string[], op: MemoryOp): { error: string; matches?: string[] } | undefined {
  const content = (op.content ?? '').trim();
  const oldText = (op.old_text ?? '').trim();
  if (op.action === 'add') {
    if (!content) return { error: 'content is required for add' };
    if (!working.includes(content)) working.push(content); // an exact duplicate is not added twice
    return undefined;
  }
  if (!oldText) return { error: `old_text (a short unique substring of the entry) is required for ${op.action}` };
  if (op.action === 'replace' && !content) return { error: 'content is required for replace (use remove to delete an entry)' };
  const found = findOne(working, oldText);
  if ('error' in found) return found;
  if (op.action === 'remove') {
    working.splice(found.index, 1);
    return undefined;
  }
  working[found.index] = content;
  // Like add, replace never leaves two copies of one text: any other copy (an entry it now equals,
  // or an identical duplicate of the one it matched) goes; the replaced entry keeps its place.
  for (let i = working.length - 1; i >= 0; i--) if (i !== found.index && working[i] === content) working.splice(i, 1);
  return undefined;
}

/**
 * Applies `ops` to `entries` as one atomic batch: any failing operation rejects the whole batch;
 * the limit is checked against the final entries only (a batch may free room and then add), and
 * not at all for a batch of removes.
 */
export function applyMemoryOps(entries: readonly string[], ops: readonly MemoryOp[], limit: number): ApplyResult {
  if (ops.length === 0) return { ok: false, error: 'operations is empty' };
  const working = [...entries];
  for (const [i, op] of ops.entries()) {
    const failed = applyOne(working, op);
    if (failed) return { ok: false, error: ops.length > 1 ? `operation ${i + 1} (${op.action}): ${failed.error}; no operation was applied` : failed.error, ...(failed.matches ? { matches: failed.matches } : {}) };
  }
  const chars = usedChars(working);
  // Only what adds text is held to the limit (Hermes checks add and replace, never remove): a store
  // over a lowered limit, or restored from a larger revision, can still shrink one entry at a time.
  if (chars > limit && ops.some((o) => o.action !== 'remove')) return { ok: false, error: `the result would take ${chars.toLocaleString('en-US')}/${limit.toLocaleString('en-US')} characters`, overLimit: { chars } };
  const changed = working.length !== entries.length || working.some((e, i) => e !== entries[i]);
  return { ok: true, entries: working, changed };
}

/** "67% — 1,474/2,200 chars": how full a store is. */
export function usageLine(entries: readonly string[], limit: number): string {
  const chars = usedChars(entries);
  const pct = limit > 0 ? Math.min(100, Math.floor((chars / limit) * 100)) : 0;
  return `${pct}% — ${chars.toLocaleString('en-US')}/${limit.toLocaleString('en-US')} chars`;
}
