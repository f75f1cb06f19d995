// Checkpoints: before `write_file` or `patch` change the workspace, a snapshot of it in a git
// object store beside the files (`/workspace/.hermes/checkpoints`; all of `.hermes` is left out
// of the snapshots); `/rollback` lists them, `/rollback N` restores the N-th newest and says which files
// changed. Everything runs as commands in the session's sandbox, so it works the same on every
// backend and never touches the host. The store is the agent's own undo history inside its own
// workspace: a command that damages it only loses checkpoints, it crosses no boundary. Its git
// config and attributes are the agent's to write too (a terminal command can), and git runs
// commands they name (core.fsmonitor, hooks, filter drivers, gpg), which would run past the
// approval guard at the next write_file: so every run rewrites them and overrides those keys.
import type { ExecResult, SessionSandbox } from '../../sandbox/index.js';

/** Inside the sandbox; file tools refuse to write here. */
export const CHECKPOINT_DIR = '/workspace/.hermes/checkpoints';
/** Hermes' defaults: files over 10 MB are left out; `/rollback` lists the newest 20. */
export const MAX_FILE_MB = 10;
export const LIST_LIMIT = 20;

const ENV = {
  GIT_DIR: CHECKPOINT_DIR,
  GIT_WORK_TREE: '/workspace',
  GIT_AUTHOR_NAME: 'hermes', GIT_AUTHOR_EMAIL: 'checkpoints@hermes.invalid',
  GIT_COMMITTER_NAME: 'hermes', GIT_COMMITTER_EMAIL: 'checkpoints@hermes.invalid',
  GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0',
  // As `git -c`: over the store's own config, whatever a command wrote into it.
  ...gitConfigEnv({ 'core.hooksPath': '/dev/null', 'core.fsmonitor': 'false', 'commit.gpgSign': 'false', 'log.showSignature': 'false', 'core.attributesFile': '/dev/null' }),
};

function gitConfigEnv(pairs: Record<string, string>): Record<string, string> {
  const entries = Object.entries(pairs);
  return Object.fromEntries([['GIT_CONFIG_COUNT', String(entries.length)], ...entries.flatMap(([k, v], i) => [[`GIT_CONFIG_KEY_${i}`, k], [`GIT_CONFIG_VALUE_${i}`, v]])]);
}

// The store's config and attributes as this code wrote them, before any git command: a config
// that names commands (core.fsmonitor, filter.*.clean, diff.*.textconv, includes) is replaced, and
// no filter, diff driver, ident or encoding applies to a snapshot or a restore.
const RESET = `if [ -f "$GIT_DIR/HEAD" ]; then
rm -f "$GIT_DIR/config" "$GIT_DIR/info/attributes"; mkdir -p "$GIT_DIR/info"
printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfilemode = true\\n\\tbare = false\\n\\tlogallrefupdates = true\\n\\tautocrlf = false\\n[gc]\\n\\tauto = 0\\n' > "$GIT_DIR/config"
printf '* -filter -diff -ident -working-tree-encoding\\n' > "$GIT_DIR/info/attributes"
fi
`;

// Creates the store on first use; the exclude list is rewritten each time (Hermes' reserved
// folder /workspace/.hermes — the store itself, a session sandbox's working directory — and files
// over the size limit). `git add -A` then records deletions too.
const PREPARE = `set -e
cd /workspace
if [ ! -f "$GIT_DIR/HEAD" ]; then mkdir -p "$GIT_DIR" && git init -q; fi
${RESET}{ echo '/.hermes/'; find . -path ./.hermes -prune -o -type f -size +${MAX_FILE_MB}M -print | sed 's|^\\./|/|'; } > "$GIT_DIR/info/exclude"
git add -A -- . 2>/dev/null || git add -A -- .
`;

// The message arrives on stdin (never in the command line).
const SNAPSHOT = `${PREPARE}
if git rev-parse -q --verify HEAD >/dev/null && git diff --no-ext-diff --cached --quiet; then echo "unchanged $(git rev-parse --short HEAD)"; exit 0; fi
git commit -q --no-verify --allow-empty -F - && echo "created $(git rev-parse --short HEAD)"
`;

const LIST = `set -e
${RESET}[ -f "$GIT_DIR/HEAD" ] && git rev-parse -q --verify HEAD >/dev/null || exit 0
git log -n ${LIST_LIMIT} --format='%h%x09%cI%x09%s'
`;

// $1 = N (validated digits). The target is chosen before the pre-rollback snapshot, which keeps the
// current state restorable; read-tree then makes files and index exactly the target's.
const restore = (n: number) => `set -e
${RESET}[ -f "$GIT_DIR/HEAD" ] && git rev-parse -q --verify HEAD >/dev/null || { echo 'none'; exit 0; }
target=$(git rev-list --skip=${n - 1} -n 1 HEAD)
[ -n "$target" ] || { echo "missing $(git rev-list --count HEAD)"; exit 0; }
${PREPARE}
git diff --no-ext-diff --cached --quiet HEAD || git commit -q --no-verify -m 'Before /rollback ${n}'
echo "restored $(git rev-parse --short "$target")"
git diff --no-ext-diff --name-status --no-renames HEAD "$target"
git read-tree -u --reset "$target"
`;

export class CheckpointError extends Error {
  override name = 'CheckpointError';
}

function ok(r: ExecResult, what: string): string {
  if (r.status !== 'ok' || r.exitCode !== 0) throw new CheckpointError(`${what} failed (${r.status}${r.reason ? `: ${r.reason}` : ''}, exit ${r.exitCode}): ${r.output.slice(-500)}`);
  return r.output;
}

export interface Checkpoint {
  id: string;
  at: string;
  reason: string;
}

export interface RestoreResult {
  restored?: Checkpoint;
  /** What the restore did to each file that differed. */
  changes: { path: string; change: 'reverted' | 'restored' | 'removed' }[];
  /** Checkpoints that exist (when N was beyond them). */
  available?: number;
}

const CHANGE = { M: 'reverted', A: 'restored', D: 'removed', T: 'reverted' } as const;

/** A `git diff --name-status HEAD target` line: A = the target has it again, D = it is gone. */
function changeOf(line: string): RestoreResult['changes'][number] {
  const [code = 'M', ...path] = line.split('\t');
  return { path: path.join('\t'), change: CHANGE[code[0] as keyof typeof CHANGE] ?? 'reverted' };
}

export class Checkpoints {
  constructor(private readonly sandbox: SessionSandbox) {}

  /** Snapshots the workspace (nothing new when it did not change); returns the checkpoint id. */
  async snapshot(reason: string, signal: AbortSignal): Promise<string> {
    const out = ok(await this.sandbox.run({ command: SNAPSHOT, env: ENV, stdin: reason.slice(0, 500) || 'checkpoint', maxOutputChars: 4_000 }, signal), 'Checkpoint');
    return out.trim().split(/\s+/)[1] ?? '';
  }

  /** The newest checkpoints first. */
  async list(signal: AbortSignal): Promise<Checkpoint[]> {
    const out = ok(await this.sandbox.run({ command: LIST, env: ENV, maxOutputChars: 20_000 }, signal), 'Listing checkpoints');
    return out.split('\n').filter(Boolean).map((line) => {
      const [id = '', at = '', ...rest] = line.split('\t');
      return { id, at, reason: rest.join('\t') };
    });
  }

  /** Restores the N-th newest checkpoint (1 = the newest). */
  async restore(n: number, signal: AbortSignal): Promise<RestoreResult> {
    if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new CheckpointError(`checkpoint number must be 1 or more, got ${n}`);
    const before = await this.list(signal);
    const out = ok(await this.sandbox.run({ command: restore(n), env: ENV, maxOutputChars: 100_000 }, signal), 'Rollback');
    const [head = '', ...lines] = out.split('\n').filter(Boolean);
    if (head === 'none') return { changes: [], available: 0 };
    if (head.startsWith('missing')) return { changes: [], available: Number(head.split(' ')[1]) };
    const id = head.split(' ')[1] ?? '';
    const restored = before.find((c) => id.startsWith(c.id) || c.id.startsWith(id)) ?? { id, at: '', reason: '' };
    return { restored, changes: lines.map(changeOf) };
  }
}
