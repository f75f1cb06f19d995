// Dangerous-command detection: commands a human (or the smart reviewer) decides on before they
// run. Hermes' categories — recursive deletes, world-writable modes, remote code piped into a
// shell, writes to system files, killing processes, history-rewriting git, destructive SQL,
// disks, services, privilege changes — written as our own rules over shell-words' reading of the
// line, so the same disguises that cannot hide a hardline command cannot hide these.
import { programOf, simpleCommands, type SimpleCommand } from './shell-words.js';

const SYSTEM_PATH = /^(\/etc|\/usr|\/boot|\/sys|\/proc\/sys|\/lib|\/lib64|\/bin|\/sbin|\/root|\/var\/spool\/cron|\/dev)(\/|$)|^~?\/?\.?(ssh|bashrc|profile|zshrc|bash_profile)(\/|$)|^~\/\.(ssh|bashrc|profile|zshrc|bash_profile|aws|kube|gnupg|config\/systemd)(\/|$)/i;

const hasFlag = (words: string[], short: string, long?: string) =>
  words.slice(1).some((w) => (w.startsWith('-') && !w.startsWith('--') && w.slice(1).toLowerCase().includes(short)) || (long !== undefined && w === long));

type Rule = (cmd: SimpleCommand, program: string) => string | undefined;

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'ash', 'fish', 'mksh']);

/**
 * A shell that takes its commands from its input (`printf 'rm -rf x' | sh`, `sh < f`, `bash -s`):
 * no `-c` body and no script operand, or `-s`. What it runs is data the guard never sees.
 */
function shellReadsInput(c: SimpleCommand, p: string): boolean {
  if (!SHELLS.has(p)) return false;
  const args = c.words.slice(1);
  if (args.some((w) => /^-[a-z]*s[a-z]*$/i.test(w))) return true;
  for (let i = 0; i < args.length; i++) {
    const w = args[i]!;
    if (/^-[a-z]*c[a-z]*$/i.test(w)) return args[i + 1] === undefined;
    if (w === '-o' || w === '+o' || w === '-O' || w === '+O' || w === '--rcfile' || w === '--init-file') { i++; continue; }
    if (!w.startsWith('-') && !w.startsWith('+')) return false;
  }
  return true;
}

/**
 * Interpreters, and the option that gives them a program on the command line (`python3 -c`,
 * `perl -ne`, `node -e`): what that program does (`os.system("git push")`, `shutil.rmtree`) is
 * code the guard does not read, as Hermes' "inline execution" pattern says.
 */
const INLINE: readonly [RegExp, RegExp][] = [
  [/^(python|pypy)[0-9.]*$/, /^-[A-Za-z]*c$/],
  [/^perl[0-9.]*$/, /^-[A-Za-z]*[eE]$/],
  [/^(ruby[0-9.]*|lua[0-9.]*|luajit|rscript)$/, /^-[A-Za-z]*e$/],
  [/^(node|nodejs|bun|deno)$/, /^(-[A-Za-z]*[ep]|--eval|--print|eval)$/],
  [/^php[0-9.]*$/, /^-[A-Za-z]*r$/],
];
const QUERIES = new Set(['-V', '--version', '-v', '-h', '--help']);

/** `python3 -c '…'`, `perl -e '…'`, or an interpreter reading its program from input (`… | python3`, `python3 -`). */
function inlineCode(c: SimpleCommand, p: string): string | undefined {
  const inline = INLINE.find(([name]) => name.test(p));
  if (!inline) return undefined;
  const args = c.words.slice(1);
  // Options come before the program's own operand (`python3 x.py -c y` passes -c to x.py).
  const end = args.findIndex((w) => !w.startsWith('-') || w === '-');
  const options = end < 0 ? args : args.slice(0, end);
  const flag = options.find((w) => inline[1].test(w));
  if (flag) return `${p} ${flag}`;
  if (args[end] === '-' || (end < 0 && !options.some((w) => QUERIES.has(w) || w === '-m'))) return `${p} reading its program from input`;
  return undefined;
}

const RULES: Rule[] = [
  (c) => (c.writes.some((w) => /^\/dev\/(tcp|udp)\//.test(w)) || c.words.some((w) => /^\/dev\/(tcp|udp)\//.test(w)) ? 'a reverse shell' : undefined),
  (c) => (c.elevated ? 'running as root (sudo)' : undefined),
  (c, p) => (p === 'rm' && hasFlag(c.words, 'r', '--recursive') ? 'recursive delete' : undefined),
  (c, p) => (p === 'rmdir' || (p === 'find' && (c.words.includes('-delete') || c.words.some((w, i) => (w === '-exec' || w === '-execdir') && /^(rm|shred|unlink)$/.test(c.words[i + 1] ?? '')))) ? 'deleting files found by a search' : undefined),
  (c, p) => (p === 'chmod' && c.words.some((w) => /^(0?[0-7]?777|a\+[rwx]*w|o\+[rwx]*w|\+w|ugo\+[rwx]*w)$/i.test(w)) ? 'world-writable permissions (chmod 777)' : undefined),
  (c, p) => ((p === 'chmod' || p === 'chown' || p === 'chgrp') && hasFlag(c.words, 'r', '--recursive') ? `recursive ${p}` : undefined),
  (c, p) => (p === 'chmod' && c.words.some((w) => /^[ugoa]*\+[rwx]*s|^[2467][0-7]{3}$/.test(w)) ? 'setuid/setgid bit' : undefined),
  (c) => (c.writes.some((w) => SYSTEM_PATH.test(w)) ? 'writing to a system or credentials file' : undefined),
  (c, p) => ((p === 'tee' || p === 'cp' || p === 'mv' || p === 'install' || p === 'ln' || p === 'truncate') && c.words.slice(1).some((w) => SYSTEM_PATH.test(w)) ? `${p} into a system or credentials file` : undefined),
  (c, p) => (p === 'sed' && hasFlag(c.words, 'i', '--in-place') && c.words.some((w) => SYSTEM_PATH.test(w)) ? 'editing a system file in place' : undefined),
  (_c, p) => (p === 'kill' || p === 'killall' || p === 'pkill' || p === 'skill' ? 'killing processes' : undefined),
  (c, p) => (p === 'git' && c.words[1] === 'push' && c.words.some((w) => w === '--force' || w === '-f' || w.startsWith('--force-with-lease') || w === '--mirror' || w === '--delete' || /^\+/.test(w)) ? 'git push --force' : undefined),
  (c, p) => (p === 'git' && c.words[1] === 'reset' && c.words.includes('--hard') ? 'git reset --hard' : undefined),
  (c, p) => (p === 'git' && c.words[1] === 'clean' && hasFlag(c.words, 'f', '--force') ? 'git clean -f' : undefined),
  (c, p) => (p === 'git' && (c.words[1] === 'filter-branch' || c.words[1] === 'filter-repo' || (c.words[1] === 'branch' && c.words.includes('-D'))) ? `git ${c.words[1]}` : undefined),
  (c, p) => (p === 'dd' || p === 'fdisk' || p === 'parted' || p === 'mkfs' || p === 'losetup' || p === 'mount' || p === 'umount' || p === 'swapoff' ? `disk operation (${p})` : undefined),
  (c, p) => ((p === 'systemctl' || p === 'service') && c.words.some((w) => /^(stop|disable|mask|kill|restart|isolate)$/.test(w)) ? 'stopping or changing system services' : undefined),
  (c, p) => (p === 'crontab' && hasFlag(c.words, 'r') ? 'removing the crontab' : undefined),
  (c, p) => ((p === 'iptables' || p === 'ip6tables' || p === 'nft' || p === 'ufw') ? 'changing the firewall' : undefined),
  (_c, p) => (p === 'passwd' || p === 'useradd' || p === 'usermod' || p === 'userdel' || p === 'visudo' ? 'privilege or account change' : undefined),
  (c, p) => ((p === 'nc' || p === 'ncat' || p === 'netcat' || p === 'socat') && c.words.some((w) => w === '-e' || w === '-c' || /exec:/i.test(w)) ? 'a reverse shell' : undefined),
  // Last, so a more specific reason wins. What runs is only known when the line runs
  // (`r=rm; $r -rf x`, `eval $x`, `sh -c "$x"`, whose bodies shell-words reads as a command named
  // `$x`), or is data on a shell's input: the guard cannot check it, so a human decides.
  (c, p) => (p.includes('$') ? `a command whose name is only known when it runs (${c.words[0]}), so it cannot be checked` : undefined),
  (c, p) => (shellReadsInput(c, p) ? `a shell reading its commands from input the guard cannot see (${p})` : undefined),
  (c, p) => { const how = inlineCode(c, p); return how ? `a program given to an interpreter, which the guard cannot read (${how})` : undefined; },
];

/** A download (curl/wget/fetch) piped or substituted into a shell or interpreter. */
function remoteCodeIntoShell(line: string): boolean {
  const dense = line.replace(/\s+/g, ' ');
  if (/\b(curl|wget|fetch|aria2c)\b[^|;&]*\|\s*(sudo\s+)?(env\s+)?(\S*\/)?(sh|bash|zsh|dash|ksh|python[0-9.]*|perl|ruby|node|php)\b/i.test(dense)) return true;
  if (/\b(sh|bash|zsh|dash|ksh|source|\.)\s+<\(\s*(curl|wget)\b/i.test(dense)) return true;
  if (/\b(sh|bash|zsh|eval)\b[^;|&]*\$\(\s*(curl|wget)\b/i.test(dense)) return true;
  return /\bbase64\s+(-d|--decode)\b[^;&]*\|\s*(sudo\s+)?(sh|bash|zsh|dash|python[0-9.]*|perl)\b/i.test(dense);
}

/** Destructive SQL, wherever it appears on the line (psql -c, mysql -e, a heredoc). */
function destructiveSql(line: string): string | undefined {
  if (/\bdrop\s+(table|database|schema|index|view|user|role)\b/i.test(line)) return 'DROP in SQL';
  if (/\btruncate\s+(table\s+)?[a-z_"`]/i.test(line) && /\b(psql|mysql|sqlite3|mariadb|cockroach|clickhouse|sql|-c|-e)\b/i.test(line)) return 'TRUNCATE in SQL';
  if (/\bdelete\s+from\s+[^;]*?(;|$|["'])/i.test(line) && !/\bdelete\s+from\s+[^;]*\bwhere\b/i.test(line)) return 'DELETE without WHERE in SQL';
  return undefined;
}

/** Why `command` needs a decision before it runs, or undefined when it may run as it is. */
export function dangerousReason(command: string): string | undefined {
  if (remoteCodeIntoShell(command)) return 'remote content piped into a shell (curl | sh)';
  const sql = destructiveSql(command);
  if (sql) return sql;
  for (const cmd of simpleCommands(command)) {
    const program = programOf(cmd);
    for (const rule of RULES) {
      const why = rule(cmd, program);
      if (why) return why;
    }
  }
  return undefined;
}
