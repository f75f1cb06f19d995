// Arguments a tool hands to Postgres as text (skills, Kanban tasks, session_search queries): a `text`
// column refuses U+0000 and a `jsonb` one the escape of an unpaired UTF-16 surrogate. A model can
// send either (a JSON "\u0000" or "\ud800" escape in its arguments); refused here by name, before
// the handler runs, instead of a driver error ("invalid byte sequence for encoding UTF8") from deep
// in the write. Tools that do not store their arguments (a terminal command, a file write) are
// not checked.

/** The first string (key or value) in `value` that Postgres cannot store, with its path and why; undefined when all can be. */
export function unstorableArgument(value: unknown, path: string[] = []): { path: string; why: string } | undefined {
  if (typeof value === 'string') {
    const where = path.join('.') || '(root)';
    if (value.includes('\u0000')) return { path: where, why: 'contains a NUL (U+0000) character' };
    if (!value.isWellFormed()) return { path: where, why: 'contains an unpaired UTF-16 surrogate (half of an emoji or other character)' };
    return undefined;
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = unstorableArgument(item, [...path, String(i)]);
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [k, item] of Object.entries(value)) {
      const found = unstorableArgument(k, path) ?? unstorableArgument(item, [...path, k]);
      if (found) return found;
    }
  }
  return undefined;
}
