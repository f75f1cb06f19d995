// The frozen memory snapshot of a session's prompt (volatile layer): each store rendered once,
// when the session's prompt is built, with its usage header — "MEMORY (your personal notes)
// [67% — 1,474/2,200 chars]" — and its entries. A write during the session is durable at once
// but does not change this text, so the prompt prefix stays byte-identical (cache-friendly); the
// next session sees the write. An entry that would not pass the write-time scan (written by
// anything but the tool) is replaced by a placeholder: it never reaches the prompt.
import { scanForInjection } from '../prompt.js';
import { ENTRY_DELIMITER, usageLine, type MemoryTarget } from './entries.js';

const HEADERS: Record<MemoryTarget, string> = {
  memory: 'MEMORY (your personal notes)',
  user: 'USER PROFILE (who the user is)',
};
const RULE = '═'.repeat(46);
/** The block's own markup: a rule of ═ (its header's frame) or a line that is only § (the entry delimiter). */
const MARKUP = /═{3,}|^[ \t]*§[ \t]*$/m;

/**
 * Why `text` must not be a memory entry, or undefined: the context-file scan (injection,
 * exfiltration, invisible Unicode), or the block's own markup — an entry holding a ═ rule and a
 * header, or a § line, would read as another entry or another block (a MEMORY entry, written by
 * any user, shown to everyone as their USER PROFILE).
 */
export function unsafeEntry(text: string): string | undefined {
  return scanForInjection(text) ?? (MARKUP.test(text) ? 'it contains the memory block\'s own markup (a ═ rule or a line that is only §), which would make it read as another entry or another block of the prompt' : undefined);
}

/** The prompt block of one store, or '' when it is empty. */
export function renderMemoryBlock(target: MemoryTarget, entries: readonly string[], limit: number): string {
  if (entries.length === 0) return '';
  const shown = entries.map((entry) => {
    const why = unsafeEntry(entry);
    return why ? `[BLOCKED: this ${target === 'user' ? 'USER' : 'MEMORY'} entry was kept out of the prompt: ${why}. Use memory(action=remove) to delete it.]` : entry;
  });
  return [RULE, `${HEADERS[target]} [${usageLine(entries, limit)}]`, RULE, shown.join(ENTRY_DELIMITER)].join('\n');
}
