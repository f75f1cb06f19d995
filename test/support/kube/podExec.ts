// Runs a command inside a running pod's sandbox by joining the namespaces of its bubblewrap
// process with util-linux nsenter: same mount namespace (so the pod's root, /tmp, volumes and
// working dir), pid namespace (the pod sees the process and dies with it), ipc, uts and net.
//
// As root, bwrap creates no user namespace and nsenter joins the rest directly. Unprivileged,
// bwrap creates its namespaces in a user namespace it then leaves for a nested one (it needs
// uid 0 to mount /dev's devpts, then maps back to the caller's uid), so the pod's process sits
// in a user namespace that does not own its other namespaces and `nsenter -U` into it cannot
// join them (EPERM). nsenter 2.38 has no --user-parent, so a line of perl (perl-base ships with
// every Debian) asks the kernel for the owner of the pod's mount namespace (NS_GET_USERNS) and
// hands that to nsenter as --user.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** How to run an exec'd command like the pod's container. */
export interface ExecTarget {
  /** Host pid of a process inside the pod's namespaces. */
  pid: number;
  env: Record<string, string>;
  workingDir: string;
}

const NS_GET_USERNS = 0xb701;
const OWNER_USERNS = [
  'use Fcntl; my $pid = shift;',
  'open(my $ns, "<", "/proc/$pid/ns/mnt") or die "open /proc/$pid/ns/mnt: $!\\n";',
  `my $fd = ioctl($ns, ${NS_GET_USERNS}, 0) or die "NS_GET_USERNS: $!\\n"; $fd += 0;`,
  'open(my $u, "<&=", $fd) or die "fdopen: $!\\n"; fcntl($u, F_SETFD, 0) or die "fcntl: $!\\n";',
  'exec("nsenter", "--target=$pid", "--user=/proc/self/fd/$fd", "--preserve-credentials", @ARGV) or die "exec nsenter: $!\\n";',
].join(' ');

const parentOf = (pid: string): number | undefined => {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
};

/** Host pids of `pid`'s children, from /proc. */
export function childrenOf(pid: number): number[] {
  return readdirSync('/proc').filter((e) => /^\d+$/.test(e) && parentOf(e) === pid).map(Number);
}

/** `pid` and every descendant, parents first. */
export function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...childrenOf(tree[i] ?? -1));
  return tree;
}

function nsenterCommand(target: number, argv: string[], workingDir: string): [string, string[]] {
  const join = ['--mount', '--uts', '--ipc', '--net', '--pid', '--root', `--wdns=${workingDir}`, '--', ...argv];
  const sameUserNs = readlinkSync(`/proc/${target}/ns/user`) === readlinkSync('/proc/self/ns/user');
  return sameUserNs ? ['nsenter', [`--target=${target}`, ...join]] : ['perl', ['-e', OWNER_USERNS, String(target), ...join]];
}

/** A command running inside a pod. */
export interface PodExec {
  child: ChildProcess;
  /** Exit code, or 128+signal when killed; 127 when it could not start. */
  exited: Promise<number>;
  /** SIGKILLs the command and everything it started that is still its descendant. */
  kill(): void;
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGPIPE: 13, SIGTERM: 15 };

/**
 * Starts `argv` in the pod's namespaces with the container's env and working dir. nsenter forks
 * (it must, to enter the pid namespace) and exits as its child did. It runs in its own process
 * group so kill() reaches the command's whole group, plus any descendant that left it.
 */
export function startPodExec(target: ExecTarget, argv: string[], stdin: boolean): PodExec {
  const [command, args] = nsenterCommand(target.pid, argv, target.workingDir);
  const child = spawn(command, args, { env: target.env, detached: true, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number>((resolve) => {
    child.on('close', (code, signal) => resolve(code ?? 128 + (SIGNALS[signal ?? ''] ?? 15)));
    child.on('error', () => resolve(127));
  });
  const kill = (): void => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const tree = processTree(child.pid);
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
    for (const pid of tree) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
    }
  };
  return { child, exited, kill };
}
