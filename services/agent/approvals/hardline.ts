// The hardline blocklist (SPEC "Terminal backend"): commands that never run, whatever the mode,
// allowlist or a human says — recursive deletes of / or a system folder, making file systems,
// raw writes to disks, fork bombs, shutting the machine down. Read through shell-words, so
// quoting, `sudo`, `env`, chains and substitutions do not hide them.
import { collapse, programOf, simpleCommands, type SimpleCommand } from './shell-words.js';

/** Folders whose recursive deletion (or ownership/mode change) is never allowed. */
const SYSTEM_DIRS = ['bin', 'boot', 'dev', 'etc', 'home', 'lib', 'lib32', 'lib64', 'libx32', 'opt', 'proc', 'root', 'run', 'sbin', 'srv', 'sys', 'usr', 'var', 'snap', 'mnt', 'media'];

/** `/`, `/*`, `/.`, `//`, `~`, `$HOME`, `/etc`, `/usr/`, `/usr/*`, `/lib64/.` … */
export function isSystemTarget(arg: string): boolean {
  const a = arg.replace(/\/+/g, '/');
  if (/^(\/|\/\*|\/\.|\/\.\*|~|~\/|~\/\*|\$HOME\/?\*?|\$\{HOME\}\/?\*?)$/.test(a)) return true;
  const m = /^\/([A-Za-z0-9_.-]+)\/?(\*|\.)?$/.exec(a);
  return !!m && SYSTEM_DIRS.includes(m[1]!.toLowerCase());
}

const RAW_DEVICE = /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|dm-\d|mapper\/|md\d|loop\d|sr\d|mem$|kmem$|port$)/i;

function recursiveFlag(words: string[]): boolean {
  return words.some((w) => /^-[a-z]*r[a-z]*$/i.test(w) || w === '--recursive');
}

type Rule = (cmd: SimpleCommand, program: string) => string | undefined;

const RULES: Rule[] = [
  (c, p) => (p === 'rm' && (recursiveFlag(c.words) || c.words.includes('--no-preserve-root')) && c.words.slice(1).some(isSystemTarget) ? 'recursive delete of / or a system folder' : undefined),
  (c, p) => (p === 'rm' && c.words.includes('--no-preserve-root') ? 'rm --no-preserve-root' : undefined),
  (c, p) => ((p === 'chmod' || p === 'chown' || p === 'chgrp') && recursiveFlag(c.words) && c.words.slice(1).some(isSystemTarget) ? `recursive ${p} of / or a system folder` : undefined),
  (_c, p) => (/^(mkfs(\..*)?|mke2fs|mkswap|wipefs|mkfs_.*|newfs)$/.test(p) ? 'making or wiping a file system' : undefined),
  (c, p) => (p === 'dd' && c.words.some((w) => /^of=/i.test(w) && RAW_DEVICE.test(w.slice(3))) ? 'dd to a raw device' : undefined),
  (c, p) => ((p === 'shred' || p === 'blkdiscard' || p === 'fdisk' || p === 'sfdisk' || p === 'parted' || p === 'sgdisk') && c.words.slice(1).some((w) => RAW_DEVICE.test(w)) ? `${p} on a raw device` : undefined),
  (c) => (c.writes.some((w) => RAW_DEVICE.test(w)) ? 'writing to a raw device' : undefined),
  (_c, p) => (['shutdown', 'reboot', 'halt', 'poweroff'].includes(p) ? 'shutting the machine down' : undefined),
  (c, p) => ((p === 'init' || p === 'telinit') && (c.words[1] === '0' || c.words[1] === '6') ? 'shutting the machine down' : undefined),
  (c, p) => (p === 'kill' && c.words.slice(1).some((w) => w === '-1' || w === '1') && c.words.some((w) => /^-(9|KILL|SIGKILL)$/i.test(w)) ? 'killing every process' : undefined),
];

/** Fork bombs: `:(){ :|:& };:`, `f(){ f|f& };f`, `fork while fork`, and the like. */
function forkBomb(line: string): boolean {
  const dense = line.replace(/\s+/g, '');
  if (/([A-Za-z_:][A-Za-z0-9_:]*)\(\)\{[^}]*\1\|\1&?[^}]*\};?\1/.test(dense)) return true;
  // `function f { f | f & }; f` (bash's other function syntax).
  if (/function([A-Za-z_:][A-Za-z0-9_:]*)(\(\))?\{[^}]*\1\|\1&?[^}]*\};?\1/.test(dense)) return true;
  return /fork\s*(\(\s*\))?\s*while\s*fork|while\s*(true|1|\(\s*1\s*\))?\s*:?\s*(do)?\s*[^;]*os\.fork\s*\(|for\s*\(\s*;\s*;\s*\)\s*fork/i.test(line);
}

/** Why `command` is on the hardline blocklist, or undefined. */
export function hardlineReason(command: string): string | undefined {
  if (forkBomb(command)) return 'a fork bomb';
  for (const cmd of simpleCommands(command)) {
    const program = programOf(cmd);
    for (const rule of RULES) {
      const why = rule(cmd, program);
      if (why) return why;
    }
  }
  // A last look at the flat text, for what the word reading may miss (`rm -rf /` glued to other text).
  return /(^|[\s;&|(`])rm\s+(-[a-z]*\s+)*-[a-z]*r[a-z]*\s+(-[a-z-]+\s+)*\/(\s|$|\*)/i.test(collapse(command)) ? 'recursive delete of /' : undefined;
}
