// The sandbox side of the file tools: one small POSIX sh script per call, run with cwd /workspace
// and paths relative to it (so no host path is ever spoken). Every script first resolves its
// target with `realpath -m` (GNU coreutils); when symlinks make it resolve somewhere other than the
// lexical path, the script does nothing and prints where it resolves — the tool checks that path
// (inside /workspace, not a credential) and only then runs the script again on it. Model text
// reaches these scripts only as single-quoted words (`shq`) or on stdin.
import { WORKSPACE_PATH, type ExecResult, type SessionSandbox } from '../../sandbox/index.js';
import { helperFailure, toolError } from './sandbox-result.js';
import { shq } from './shell-quote.js';
import { checkWorkspacePath } from './workspace-paths.js';

/** Script exit codes (the tool's own protocol; a command's failure is any other code). */
export const EXIT = { realpath: 90, elsewhere: 92, missing: 93, directory: 94, special: 95, binary: 96, unreadable: 97, mkdir: 98, write: 99 } as const;

/** `/workspace/a/b` → `a/b`; `/workspace` → `.` (the form `realpath --relative-to=.` prints). */
export const relative = (abs: string) => (abs === WORKSPACE_PATH ? '.' : abs.slice(WORKSPACE_PATH.length + 1));

/** The script prefix: resolves `./<rel>` into `$f`, or exits with where it really resolves. */
function resolvePrefix(rel: string): string {
  return [
    `r=$(realpath -m --relative-to=. -- ${shq(`./${rel}`)} 2>&1) || { printf '%s' "$r"; exit ${EXIT.realpath}; }`,
    `[ "$r" = ${shq(rel)} ] || { printf '%s' "$r"; exit ${EXIT.elsewhere}; }`,
    'f="./$r"',
  ].join('\n');
}

/** Checks for a file that is read: exists, regular, readable, and (optionally) not binary. */
export function readableChecks(binary: boolean): string {
  return [
    `[ -e "$f" ] || exit ${EXIT.missing}`,
    `[ -d "$f" ] && exit ${EXIT.directory}`,
    `[ -f "$f" ] || exit ${EXIT.special}`,
    `[ -r "$f" ] || exit ${EXIT.unreadable}`,
    ...(binary ? [`[ "$(head -c 8192 -- "$f" | tr -dc '\\000' | wc -c)" -gt 0 ] && exit ${EXIT.binary}`] : []),
  ].join('\n');
}

export interface FileOp {
  sandbox: SessionSandbox;
  signal: AbortSignal;
  /** The lexically resolved /workspace path (already checked). */
  path: string;
  /** What the tool says it was doing, for errors ("read_file"). */
  what: string;
  /** The script body after `$f` is set. */
  body: string;
  stdin?: string;
  maxOutputChars?: number;
}

export type FileOpResult = { ok: true; path: string; result: ExecResult } | { ok: false; error: string };

const messages: Partial<Record<number, (p: string) => string>> = {
  [EXIT.missing]: (p) => `File not found: ${p}`,
  [EXIT.directory]: (p) => `${p} is a directory, not a file (list it with search_files {"target": "files", "path": ${JSON.stringify(p)}})`,
  [EXIT.special]: (p) => `${p} is not a regular file (a device, socket or pipe)`,
  [EXIT.binary]: (p) => `${p} looks like a binary file (it contains NUL bytes); file tools read and edit text only`,
  [EXIT.unreadable]: (p) => `${p} cannot be read (permission denied)`,
  [EXIT.mkdir]: (p) => `could not create the parent folders of ${p}`,
  [EXIT.write]: (p) => `could not write ${p}`,
};

/** The refusal for one of the scripts' own exit codes, or undefined for other codes. */
export function opError(r: ExecResult, path: string): string | undefined {
  const m = messages[r.exitCode];
  if (m) return toolError(m(path), { exit_code: r.exitCode });
  if (r.exitCode === EXIT.realpath) return toolError(`could not resolve ${path} in the sandbox (the image needs GNU coreutils' realpath): ${r.output.slice(0, 500)}`, { exit_code: r.exitCode });
  return undefined;
}

/**
 * Runs `op.body` on `op.path` after resolving symlinks in the sandbox; refuses when they lead
 * outside /workspace or onto a credential. Returns the sandbox's result for the body to read.
 */
export async function runFileOp(op: FileOp): Promise<FileOpResult> {
  let path = op.path;
  for (let attempt = 0; attempt < 3; attempt++) {
    const r = await op.sandbox.run({ command: `${resolvePrefix(relative(path))}\n${op.body}`, cwd: WORKSPACE_PATH, ...(op.stdin !== undefined ? { stdin: op.stdin } : {}), ...(op.maxOutputChars ? { maxOutputChars: op.maxOutputChars } : {}) }, op.signal);
    const failed = helperFailure(r, op.what);
    if (failed) return { ok: false, error: failed };
    if (r.exitCode !== EXIT.elsewhere) return { ok: true, path, result: r };
    const target = r.output.trim();
    if (target.startsWith('/') || target === '..' || target.startsWith('../')) {
      return { ok: false, error: toolError(`Refused: ${JSON.stringify(op.path)} goes through a symbolic link that leads outside ${WORKSPACE_PATH} (to ${JSON.stringify(target)} from ${WORKSPACE_PATH}). File tools only act inside the session workspace.`) };
    }
    const allowed = checkWorkspacePath(target === '.' ? WORKSPACE_PATH : `${WORKSPACE_PATH}/${target}`, op.path);
    if (!allowed.ok) return { ok: false, error: toolError(`${allowed.error} (through a symbolic link)`) };
    path = allowed.path;
  }
  return { ok: false, error: toolError(`${op.path} kept resolving to a different place (symbolic links changing while it was read); try again`) };
}
