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

/** Programs that run their arguments as a command: the guard looks at what they run. */
const WRAPPERS = new Set(['sudo', 'doas', 'env', 'nice', 'nohup', 'command', 'builtin', 'exec', 'time', 'timeout', 'stdbuf', 'ionice', 'chrt', 'setsid', 'xargs', 'busybox', 'unbuffer', 'chroot', 'su', 'pkexec']);
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

/** Drops `sudo -u x`, `env A=1`, `timeout 5`, leading `VAR=value` assignments… and keeps what they run. */
function unwrap(words: string[]): { argv: string[]; elevated: boolean } {
  let w = words;
  let elevated = false;
  for (let guard = 0; guard < 16 && w.length; guard++) {
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w[0]!)) { w = w.slice(1); continue; }
    const name = basename(w[0]!);
    if (!WRAPPERS.has(name)) return { argv: w, elevated };
    if (ELEVATING.has(name)) elevated = true;
    w = w.slice(1);
    // Options and their values (`-u root`, `-n 10`, `--preserve-env`), durations (`timeout 5s`).
    while (w.length && (w[0]!.startsWith('-') || /^[0-9.]+[smhd]?$/.test(w[0]!) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w[0]!))) {
      const opt = w[0]!;
      w = w.slice(1);
      if (/^-[ugCnsck]$/.test(opt) && w.length > 1) w = w.slice(1);
    }
  }
  return { argv: w, elevated };
}

function simple(words: string[]): SimpleCommand | undefined {
  const argv: string[] = [];
  const writes: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (/^[0-9]*>/.test(w) || w === '&>' || /^>/.test(w)) { if (words[i + 1] !== undefined) writes.push(words[++i]!); continue; }
    if (w === '<' || w === '<<' || w === '<<<') { i++; continue; }
    argv.push(w);
  }
  const { argv: unwrapped, elevated } = unwrap(argv);
  if (!unwrapped.length && !writes.length && !elevated) return undefined;
  return { words: unwrapped, writes, text: unwrapped.join(' '), elevated };
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

/** Every simple command in `line`, including those inside substitutions and `sh -c` bodies. */
export function simpleCommands(line: string, depth = 0): SimpleCommand[] {
  const s = scan(plain(line));
  const out: SimpleCommand[] = [];
  let from = 0;
  for (const cut of [...s.breaks, s.words.length]) {
    const cmd = simple(s.words.slice(from, cut));
    from = cut;
    if (!cmd) continue;
    out.push(cmd);
    const inner = depth < MAX_DEPTH ? innerScript(cmd) : undefined;
    if (inner) out.push(...simpleCommands(inner, depth + 1));
  }
  if (depth < MAX_DEPTH) for (const body of s.nested) out.push(...simpleCommands(body, depth + 1));
  return out;
}

/** The program name of a command (`/usr/bin/rm` → `rm`), lower-cased. */
export const programOf = (cmd: SimpleCommand): string => (cmd.words[0] ? basename(cmd.words[0]) : '');

/** The line with whitespace runs collapsed (what whole-line patterns and globs read). */
export const collapse = (line: string): string => line.replace(/\s+/g, ' ').trim();
