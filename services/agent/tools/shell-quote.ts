// Quoting for the few values file tools put on a sandbox command line (paths, patterns, globs).
// Everything else — file content, replacement text — travels on the command's stdin and never
// touches the shell line. A POSIX single-quoted word has no special characters at all except the
// closing quote, so `'` becomes `'\''` and nothing else needs care: `$()`, backticks, `\`, `!`,
// globs and newlines are literal inside it. NUL cannot be part of any argv string, so it is
// refused rather than silently cut (the shell would end the word there).

/** Why a value cannot be quoted (it holds a NUL character). */
export class UnquotableError extends Error {
  constructor(what: string) {
    super(`${what} contains a NUL character, which no file name, pattern or shell word can hold`);
  }
}

/** `value` as one POSIX shell word that the shell reads back exactly. Throws on NUL. */
export function shq(value: string, what = 'the value'): string {
  if (value.includes('\0')) throw new UnquotableError(what);
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

