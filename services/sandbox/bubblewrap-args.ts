// bubblewrap's argv for one call: fresh namespaces, a read-only root holding only the system's
// program folders, a synthetic /etc, the session workspace at /workspace, a private /tmp, an
// empty environment. The command runs behind a small wrapper that reports "set up" on fd 4,
// closes every inherited descriptor, applies resource limits and changes to the working folder.
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { ETC_HOST_BINDS, SANDBOX_HOSTNAME, SANDBOX_INNER_ID } from './sandbox-etc.js';
import { WORKSPACE_PATH } from './types.js';

export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** The descriptor the wrapper writes one byte to once the sandbox is set up. */
export const READY_FD = 4;
/** The descriptor bubblewrap reads its options from (keeps env values out of the host's `ps`). */
export const ARGS_FD = 3;

/** Per-process limits inside the sandbox (setrlimit through the wrapper's `ulimit`; 0 = none). */
export interface SandboxLimits {
  /** RLIMIT_NPROC: processes of the sandbox user (contains a fork bomb). */
  processes: number;
  /** RLIMIT_FSIZE in bytes: the largest file one process may write. */
  fileBytes: number;
  /** RLIMIT_AS in bytes: address space of one process (0: unlimited; JVMs and wasm need a lot). */
  memoryBytes: number;
  /** RLIMIT_NOFILE. */
  openFiles: number;
}

export interface BwrapPlan {
  workspaceDir: string;
  etcDir: string;
  network: boolean;
  env: Record<string, string>;
  cwd: string;
  command: string;
  limits: SandboxLimits;
  tmpBytes: number;
}

/** /bin, /sbin, /lib* as the host has them: merged-/usr symlinks stay symlinks, real folders are bound. */
export function systemDirArgs(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32']) {
    const st = lstatSync(dir, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  return args;
}

/** The wrapper shell: bash when the host has it (it can close descriptors above 9), else sh. */
export const WRAPPER_SHELL = existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';

// $1 = working folder, $2 = command. Output of the command and the wrapper goes to stdout only:
// bubblewrap's own stderr then carries nothing but its set-up errors.
const wrapper = (merge: boolean): string => [
  `printf . >&${READY_FD} || exit 125`,
  ...(merge ? ['exec 2>&1'] : []),
  'for f in /proc/self/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-"; done',
  '[ -z "$HERMES_LIMITS" ] || ulimit -S -H $HERMES_LIMITS 2>/dev/null',
  'unset HERMES_LIMITS',
  'cd -- "$1" || exit 1',
  'exec /bin/sh -c "$2"',
].join('\n');
const WRAPPER = wrapper(true);
// A channel process (types.ts ChannelRequest) keeps stdin and stdout for its line channel; its
// stderr is its output.
const CHANNEL_WRAPPER = wrapper(false);

function limitFlags(l: SandboxLimits): string {
  const flags: string[] = [];
  if (l.processes > 0) flags.push(`-u ${l.processes}`);
  if (l.fileBytes > 0) flags.push(`-f ${Math.ceil(l.fileBytes / 1024)}`);
  if (l.memoryBytes > 0) flags.push(`-v ${Math.ceil(l.memoryBytes / 1024)}`);
  if (l.openFiles > 0) flags.push(`-n ${l.openFiles}`);
  return flags.join(' ');
}

/** bubblewrap's options (sent through --args), NUL-free strings. */
export function bwrapOptions(p: BwrapPlan, systemDirs: string[]): string[] {
  const args = [
    '--unshare-user', '--uid', String(SANDBOX_INNER_ID), '--gid', String(SANDBOX_INNER_ID), '--disable-userns',
    '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--hostname', SANDBOX_HOSTNAME,
    ...(p.network ? [] : ['--unshare-net']),
    '--die-with-parent', '--new-session',
    ...systemDirs,
    '--ro-bind', p.etcDir, '/etc',
    ...ETC_HOST_BINDS.flatMap((path) => ['--ro-bind-try', path, path]),
    '--proc', '/proc', '--dev', '/dev',
    '--size', String(Math.min(p.tmpBytes, 64 * 1024 * 1024)), '--tmpfs', '/dev/shm',
    '--size', String(p.tmpBytes), '--tmpfs', '/tmp',
    '--bind', p.workspaceDir, WORKSPACE_PATH,
    '--remount-ro', '/',
    '--chdir', WORKSPACE_PATH,
    '--clearenv',
    '--setenv', 'PATH', SANDBOX_PATH, '--setenv', 'HOME', WORKSPACE_PATH, '--setenv', 'LANG', 'C.UTF-8',
    '--setenv', 'USER', 'sandbox', '--setenv', 'HOSTNAME', SANDBOX_HOSTNAME,
  ];
  for (const [k, v] of Object.entries(p.env)) args.push('--setenv', k, v);
  args.push('--setenv', 'HERMES_LIMITS', limitFlags(p.limits));
  return args;
}

/** The argv after bubblewrap's options: the wrapper, the working folder and the command. */
export function wrapperArgv(p: BwrapPlan, channel = false): string[] {
  return [WRAPPER_SHELL, '-c', channel ? CHANNEL_WRAPPER : WRAPPER, 'hermes-sandbox', p.cwd, p.command];
}
