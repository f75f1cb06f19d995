// A hostile-input reading of a shell command line for the guard: not a shell, but enough to see
// through the trivial disguises a model (or a prompt injection) uses — extra spaces, quotes and
// backslashes inside words, `sudo`/`env`/`nice` prefixes, `;`/`&&`/`||`/`|`/`&`/newline chains,
// `$(…)`, backticks, `<(…)`, and `sh -c '…'` bodies. Every simple command found anywhere in the
// line is returned, so a pattern only has to look at one command at a time.

/** One simple command: its words with quoting removed, wrappers stripped, and the redirections seen. */
export interface SimpleCommand {
  words: string[];
  /** Targets of `>`, `>>`, `&>`, `>|` redirections (quoting removed). */
  writes: string[];
  /** The words joined by single spaces (what globs and patterns read). */
  text: string;
  /** It ran under `sudo`, `su`, `doas` or `pkexec` (stripped from `words`). */
  elevated: boolean;
}

/**
 * Programs that run their arguments as a command: the guard looks at what they run. Per program:
 * the options that take the next word as their value (short letters, long names; a value joined to
 * its option, `-n5` or `--user=x`, needs no entry), how many words come before the command
 * (`chroot DIR`, `flock FILE`, `taskset MASK`, `timeout DURATION`), and the option whose value is a
 * whole command line (`su -c 'git push'`, `flock f -c …`, `script -c …`, `env -S …`). Reading a flag
 * as taking a value would swallow the program (`sudo -s git push` read as `push`), so each has its own.
 */
interface Wrapper { values?: string; long?: readonly string[]; before?: number; body?: string; longBody?: string }
const WRAPPERS: ReadonlyMap<string, Wrapper> = new Map<string, Wrapper>([
  ['sudo', { values: 'CDghpRrTtUu', long: ['chdir', 'close-from', 'group', 'host', 'prompt', 'chroot', 'role', 'type', 'command-timeout', 'other-user', 'user'] }],
  ['doas', { values: 'Cu' }],
  ['env', { values: 'Cu', long: ['chdir', 'unset'], body: 'S', longBody: 'split-string' }],
  ['nice', { values: 'n', long: ['adjustment'] }],
  ['nohup', {}], ['command', {}], ['builtin', {}], ['exec', { values: 'a' }], ['setsid', {}], ['busybox', {}], ['unbuffer', {}], ['unshare', {}],
  ['time', { values: 'fo', long: ['format', 'output'] }],
  ['timeout', { values: 'ks', long: ['kill-after', 'signal'], before: 1 }],
  ['stdbuf', { values: 'eio', long: ['error', 'input', 'output'] }],
  ['ionice', { values: 'cnpPu', long: ['class', 'classdata', 'pid', 'pgid', 'uid'] }],
  ['chrt', { before: 1 }],
  ['xargs', { values: 'adEIiLlnPs', long: ['arg-file', 'delimiter', 'eof', 'max-lines', 'max-args', 'max-procs', 'max-chars', 'process-slot-var'] }],
  ['chroot', { long: ['userspec', 'groups'], before: 1 }],
  ['su', { values: 'gGsw', long: ['group', 'supp-group', 'shell', 'whitelist-environment'], body: 'c', longBody: 'command' }],
  ['runuser', { values: 'gGsuw', long: ['group', 'supp-group', 'shell', 'user', 'whitelist-environment'], body: 'c', longBody: 'command' }],
  ['pkexec', { long: ['user'] }],
  ['flock', { values: 'wE', long: ['wait', 'timeout', 'conflict-exit-code'], before: 1, body: 'c', longBody: 'command' }],
  ['taskset', { before: 1 }],
  ['watch', { values: 'nq', long: ['interval', 'equexit'] }],
  ['script', { values: 'EIOBT', long: ['echo', 'log-in', 'log-out', 'log-io', 'log-timing', 'logging-format'], body: 'c', longBody: 'command' }],
  ['nsenter', { values: 'tSGw', long: ['target', 'setuid', 'setgid', 'wd'] }],
  ['strace', { values: 'abeIoOpPsSuEX' }],
  ['ltrace', { values: 'aAeLnopSsuX' }],
]);
const ELEVATING = new Set(['sudo', 'doas', 'su', 'pkexec']);
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'ash', 'fish', 'mksh']);
const MAX_DEPTH = 4;

const basename = (w: string) => w.slice(w.lastIndexOf('/') + 1).toLowerCase();

/** `${IFS}`, `$IFS` and ANSI-C `$'…'` escapes in their plain form; both are classic filter dodges. */
function plain(line: string): string {
  return line
    .replace(/\$\{IFS[^}]*\}|\$IFS\b/g, ' ')
    .replace(/\$'((?:[^'\\]|\\.)*)'/g, (_m, body: string) => `'${body.replace(/\\x([0-9a-fA-F]{2})/g, (_h, hex: string) => String.fromCharCode(parseInt(hex, 16))).replace(/\\(.)/g, '$1')}'`);
}

interface Scan {
  words: string[];
  /** Bodies of `$(…)`, backticks and `<(…)`, read as commands of their own. */
  nested: string[];
  /** Places where one command ends and the next starts (indexes into `words`). */
  breaks: number[];
}

/** Reads `$(…)`/`<(…)`/`>(…)` starting at `i` (on the `(`): the body and the index after `)`. */
function parenBody(s: string, i: number): [string, number] {
  let depth = 0;
  for (let j = i; j < s.length; j++) {
    if (s[j] === '(') depth++;
    else if (s[j] === ')' && --depth === 0) return [s.slice(i + 1, j), j + 1];
  }
  return [s.slice(i + 1), s.length];
}

const BREAK = new Set([';', '&', '|', '\n', '(', ')', '{', '}']);

/** Splits into words (quotes removed, substitutions collected) and command breaks. */
class Scanner {
  readonly out: Scan = { words: [], nested: [], breaks: [] };
  private word = '';
  private inWord = false;

  constructor(private readonly s: string) {}

  run(): Scan {
    for (let i = 0; i < this.s.length; i = this.step(i) + 1);
    this.end();
    return this.out;
  }

  private end(): void {
    if (this.inWord) this.out.words.push(this.word);
    this.word = '';
    this.inWord = false;
  }

  private add(t: string): void {
    this.word += t;
    this.inWord = true;
  }

  /** A quoted or substituted part from `i`: the index of its last character, or -1 when `i` starts none. */
  private quoted(i: number): number {
    const { s } = this;
    const c = s[i]!;
    if (c === '\\') { this.add(s[i + 1] ?? ''); return i + 1; }
    if (c === "'") { const j = s.indexOf("'", i + 1); const k = j < 0 ? s.length : j; this.add(s.slice(i + 1, k)); return k; }
    if (c === '"') { const k = doubleQuoted(s, i, this.out, (t) => this.add(t)); this.inWord = true; return k; }
    if (c === '`') { const j = s.indexOf('`', i + 1); const k = j < 0 ? s.length : j; this.out.nested.push(s.slice(i + 1, k)); this.add('$CMD'); return k; }
    if ((c === '$' || c === '<' || c === '>') && s[i + 1] === '(') { const [body, next] = parenBody(s, i + 1); this.out.nested.push(body); this.add('$CMD'); return next - 1; }
    return -1;
  }

  /** Reads what starts at `i`; the index of the last character it took. */
  private step(i: number): number {
    const q = this.quoted(i);
    if (q >= 0) return q;
    const c = this.s[i]!;
    if (c === ' ' || c === '\t') { this.end(); return i; }
    // `{}` is find's and xargs' placeholder, a word, not a group.
    if (c === '{' && this.s[i + 1] === '}') { this.add('{}'); return i + 1; }
    if (BREAK.has(c)) { this.end(); this.out.breaks.push(this.out.words.length); return i; }
    if (c === '>' || c === '<') {
      if (/^[0-9]+$/.test(this.word)) { this.word = ''; this.inWord = false; } // `2>`: the descriptor, not a word
      this.end();
      let op = c;
      while (this.s[i + 1] === '>' || this.s[i + 1] === '|' || this.s[i + 1] === '&') op += this.s[++i]!;
      this.out.words.push(op);
      return i;
    }
    this.add(c);
    return i;
  }
}

const scan = (s: string): Scan => new Scanner(s).run();

/** A double-quoted string from `i` (on the `"`): its text goes to `add`; `$(…)`/backticks inside are collected. */
function doubleQuoted(s: string, i: number, out: Scan, add: (t: string) => void): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j]!;
    if (c === '"') return j;
    if (c === '\\' && j + 1 < s.length) { add(s[++j]!); continue; }
    if (c === '$' && s[j + 1] === '(') { const [body, next] = parenBody(s, j + 1); out.nested.push(body); add('$CMD'); j = next - 1; continue; }
    if (c === '`') { const k = s.indexOf('`', j + 1); const e = k < 0 ? s.length : k; out.nested.push(s.slice(j + 1, e)); add('$CMD'); j = e; continue; }
    add(c);
  }
  return s.length;
}

/** A value an option takes: joined to it (`-n5`, `--user=x`) or the next word. */
interface Taken { rest: string[]; body?: string }

/** `--name[=value]` of `spec`: the words after it, and the command line when it carries one. */
function longOption(spec: Wrapper, opt: string, w: string[]): Taken {
  const eq = opt.indexOf('=');
  const name = opt.slice(2, eq < 0 ? undefined : eq);
  const takes = name === spec.longBody || (spec.long?.includes(name) ?? false);
  if (!takes || eq >= 0) return { rest: w, ...(eq >= 0 && name === spec.longBody ? { body: opt.slice(eq + 1) } : {}) };
  return { rest: w.slice(1), ...(name === spec.longBody && w[0] !== undefined ? { body: w[0] } : {}) };
}

/** A cluster of short flags (`-qc`): the first that takes a value takes the rest of the word, or the next word. */
function shortOptions(spec: Wrapper, opt: string, w: string[]): Taken {
  for (let k = 1; k < opt.length; k++) {
    const isBody = spec.body?.includes(opt[k]!) ?? false;
    if (!isBody && !spec.values?.includes(opt[k]!)) continue;
    const joined = opt.slice(k + 1);
    const value = joined || w[0];
    const rest = joined ? w : w.slice(1);
    return isBody && value !== undefined ? { rest, body: value } : { rest };
  }
  return { rest: w };
}

/** A wrapper's options from the start of `words`: what is left, and the command line an option carried. */
function options(spec: Wrapper, words: string[]): Taken {
  let w = words;
  let body: string | undefined;
  while (w.length && w[0]!.startsWith('-') && w[0] !== '-') {
    const opt = w[0]!;
    if (opt === '--') return { rest: w.slice(1), ...(body !== undefined ? { body } : {}) };
    const taken = opt.startsWith('--') ? longOption(spec, opt, w.slice(1)) : shortOptions(spec, opt, w.slice(1));
    w = taken.rest;
    body = taken.body ?? body;
  }
  return { rest: w, ...(body !== undefined ? { body } : {}) };
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** One wrapper's words after its name: what it runs, and a command line given as an option. */
function unwrapOne(name: string, spec: Wrapper, args: string[]): Taken {
  const first = options(spec, args);
  let rest = first.rest;
  let body = first.body;
  while (rest.length && ASSIGNMENT.test(rest[0]!)) rest = rest.slice(1); // `env A=1`
  if (spec.before) rest = rest.slice(spec.before);
  if (body === undefined && spec.body && rest.length) {
    // su [-] USER -c '…': the options may follow the user.
    const user = name === 'su' || name === 'runuser' ? rest.slice(rest[0] === '-' ? 2 : 1) : rest;
    body = options(spec, user).body;
  }
  // What follows a command line given as an option is its arguments (script's log file, su's user).
  return body !== undefined ? { rest: [], body } : { rest };
}

/**
 * Drops `sudo -u x`, `env A=1`, `timeout 5`, `flock FILE`, leading `VAR=value` assignments… and
 * keeps what they run; `bodies` are command lines a wrapper's option carries (`su -c '…'`).
 */
function unwrap(words: string[]): { argv: string[]; elevated: boolean; bodies: string[] } {
  let w = words;
  let elevated = false;
  const bodies: string[] = [];
  for (let guard = 0; guard < 16 && w.length; guard++) {
    if (ASSIGNMENT.test(w[0]!)) { w = w.slice(1); continue; }
    const name = basename(w[0]!);
    const spec = WRAPPERS.get(name);
    if (!spec) break;
    if (ELEVATING.has(name)) elevated = true;
    const one = unwrapOne(name, spec, w.slice(1));
    if (one.body !== undefined) bodies.push(one.body);
    w = one.rest;
  }
  return { argv: w, elevated, bodies };
}

function simple(words: string[]): { cmd?: SimpleCommand; bodies: string[] } {
  const argv: string[] = [];
  const writes: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (/^[0-9]*>/.test(w) || w === '&>' || /^>/.test(w)) { if (words[i + 1] !== undefined) writes.push(words[++i]!); continue; }
    if (w === '<' || w === '<<' || w === '<<<') { i++; continue; }
    argv.push(w);
  }
  const { argv: unwrapped, elevated, bodies } = unwrap(argv);
  if (!unwrapped.length && !writes.length && !elevated) return { bodies };
  return { cmd: { words: unwrapped, writes, text: unwrapped.join(' '), elevated }, bodies };
}

/** `sh -c 'body'`, `bash -lc "body"`, `eval body`: the body, read as a command line. */
function innerScript(cmd: SimpleCommand): string | undefined {
  const [head, ...rest] = cmd.words;
  if (!head) return undefined;
  const name = basename(head);
  if (name === 'eval') return rest.join(' ');
  if (!SHELLS.has(name)) return undefined;
  const c = rest.findIndex((w) => /^-[a-z]*c[a-z]*$/i.test(w));
  return c >= 0 ? rest[c + 1] : undefined;
}

const FIND_EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);

/** The commands `find … -exec CMD … ;` (or `+`) runs, as words. */
function findExecs(cmd: SimpleCommand): string[][] {
  if (basename(cmd.words[0] ?? '') !== 'find') return [];
  const out: string[][] = [];
  for (let i = 1; i < cmd.words.length; i++) {
    if (!FIND_EXEC.has(cmd.words[i]!)) continue;
    const end = cmd.words.findIndex((w, k) => k > i && (w === ';' || w === '+'));
    out.push(cmd.words.slice(i + 1, end < 0 ? undefined : end));
    if (end < 0) break;
    i = end;
  }
  return out;
}

/** The simple command these words make, and every command it runs (sh -c, a wrapper's -c, find -exec). */
function commandsOf(words: string[], depth: number): SimpleCommand[] {
  const { cmd, bodies } = simple(words);
  const out = cmd ? [cmd] : [];
  if (depth >= MAX_DEPTH) return out;
  const inner = cmd ? innerScript(cmd) : undefined;
  for (const body of inner !== undefined ? [inner, ...bodies] : bodies) out.push(...simpleCommands(body, depth + 1));
  for (const exec of cmd ? findExecs(cmd) : []) out.push(...commandsOf(exec, depth + 1));
  return out;
}

/** Every simple command in `line`, including those inside substitutions, `sh -c` bodies and `find -exec`. */
export function simpleCommands(line: string, depth = 0): SimpleCommand[] {
  const s = scan(plain(line));
  const out: SimpleCommand[] = [];
  let from = 0;
  for (const cut of [...s.breaks, s.words.length]) {
    out.push(...commandsOf(s.words.slice(from, cut), depth));
    from = cut;
  }
  if (depth < MAX_DEPTH) for (const body of s.nested) out.push(...simpleCommands(body, depth + 1));
  return out;
}

/** The program name of a command (`/usr/bin/rm` → `rm`), lower-cased. */
export const programOf = (cmd: SimpleCommand): string => (cmd.words[0] ? basename(cmd.words[0]) : '');

/** The line with whitespace runs collapsed (what whole-line patterns and globs read). */
export const collapse = (line: string): string => line.replace(/\s+/g, ' ').trim();
