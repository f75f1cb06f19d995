// Where file tools may act: inside /workspace, never on credentials. Checked here, in TypeScript,
// before any command runs, so the refusal does not depend on the backend; the symlink check that
// only the sandbox can make (realpath) is repeated on its answer with `checkWorkspacePath`.
// HOME is /workspace inside every sandbox, so `~/.ssh` is /workspace/.ssh.
import { posix } from 'node:path';
import { WORKSPACE_PATH } from '../../sandbox/index.js';

/** Folders that hold credentials, refused at any depth (`~/.ssh`, `repo/.aws/…`). */
const PROTECTED_DIRS = new Set(['.ssh', '.aws', '.gnupg', '.kube', '.docker', '.azure', '.password-store', '.hermes']);
/** Two-segment credential folders (`~/.config/gcloud`). */
const PROTECTED_SUBDIRS = new Set(['.config/gcloud', '.config/gh', '.config/hub']);
/** Credential files, refused at any depth. */
const PROTECTED_FILES = new Set(['.netrc', '.git-credentials', '.pgpass', '.npmrc', '.pypirc', '.env']);
/** `.env.*` is refused too, except the templates projects commit on purpose. */
const ENV_TEMPLATES = new Set(['.env.example', '.env.sample', '.env.template']);

/** Linux's PATH_MAX, in bytes (a longer path only fails later, as a sandbox error). */
const PATH_MAX = 4_096;

export type PathCheck = { ok: true; path: string } | { ok: false; error: string };

/** Why `name` (one path segment, lower-cased) is a credential file, if it is one. */
function protectedFile(name: string): boolean {
  if (PROTECTED_FILES.has(name)) return true;
  return name.startsWith('.env.') && !ENV_TEMPLATES.has(name);
}

/** The reason an absolute, normalised path is write-protected, or undefined. */
export function protectedReason(abs: string): string | undefined {
  const segments = abs.toLowerCase().split('/').filter(Boolean);
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (PROTECTED_DIRS.has(seg) || PROTECTED_SUBDIRS.has(`${seg}/${segments[i + 1] ?? ''}`)) return `"${seg}" is a credentials folder`;
    if (protectedFile(seg)) return `"${seg}" is a credentials/secrets file`;
  }
  return undefined;
}

const inWorkspace = (abs: string) => abs === WORKSPACE_PATH || abs.startsWith(`${WORKSPACE_PATH}/`);

/** An absolute path (already resolved, e.g. by realpath in the sandbox) that file tools may touch. */
export function checkWorkspacePath(abs: string, asked = abs): PathCheck {
  if (!inWorkspace(abs)) return { ok: false, error: `Refused: ${JSON.stringify(asked)} resolves to ${JSON.stringify(abs)}, outside ${WORKSPACE_PATH}. File tools only act inside the session workspace.` };
  const why = protectedReason(abs);
  if (why) return { ok: false, error: `Refused: ${JSON.stringify(asked)} is write-protected (${why}). File tools never read or change credentials.` };
  return { ok: true, path: abs };
}

/**
 * The absolute /workspace path a model's `path` argument names: `~` is /workspace, a relative
 * path is taken from `base` (the working directory), `..` is resolved; anything outside
 * /workspace, `~user`, NUL and credential paths are refused.
 */
export function resolveWorkspacePath(path: string, base = WORKSPACE_PATH, opts: { allowProtected?: boolean } = {}): PathCheck {
  if (typeof path !== 'string' || path.trim() === '') return { ok: false, error: 'path must be a non-empty string' };
  if (path.includes('\0')) return { ok: false, error: 'path contains a NUL character' };
  // A lone surrogate reaches the sandbox as U+FFFD: the file made would not be the one reported.
  if (!path.isWellFormed()) return { ok: false, error: 'path is not well-formed Unicode (it holds a lone surrogate); name the file with ordinary characters' };
  if (Buffer.byteLength(path) > PATH_MAX) return { ok: false, error: `path is ${Buffer.byteLength(path)} bytes long; a path has at most ${PATH_MAX}` };
  let p = path;
  if (p === '~' || p.startsWith('~/')) p = WORKSPACE_PATH + p.slice(1);
  else if (p.startsWith('~')) return { ok: false, error: `Refused: ${JSON.stringify(path)} names another user's home; only ${WORKSPACE_PATH} (~) exists here.` };
  const abs = posix.normalize(posix.isAbsolute(p) ? p : posix.join(base, p)).replace(/\/+$/, '') || '/';
  if (opts.allowProtected && inWorkspace(abs)) return { ok: true, path: abs };
  return checkWorkspacePath(abs, path);
}
