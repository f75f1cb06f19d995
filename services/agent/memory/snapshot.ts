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

/** The prompt block of one store, or '' when it is empty. */
export function renderMemoryBlock(target: MemoryTarget, entries: readonly string[], limit: number): string {
  if (entries.length === 0) return '';
  const shown = entries.map((entry) => {
    const why = scanForInjection(entry);
    return why ? `[BLOCKED: this ${target === 'user' ? 'USER' : 'MEMORY'} entry was kept out of the prompt: ${why}. Use memory(action=remove) to delete it.]` : entry;
  });
  return [RULE, `${HEADERS[target]} [${usageLine(entries, limit)}]`, RULE, shown.join(ENTRY_DELIMITER)].join('\n');
}
