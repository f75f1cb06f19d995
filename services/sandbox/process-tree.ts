// Ending a sandbox: every process under the bubblewrap we started. Orphans inside the PID
// namespace are re-parented to its init (bubblewrap's own child), so walking parent links from
// our bwrap finds them all; killing that init with SIGKILL makes the kernel end the namespace.
import { readdirSync, readFileSync } from 'node:fs';

/** Parent pid of every process we can see (from /proc/<pid>/stat). */
function parents(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  return children;
}

/** All descendants of `pid`, nearest first. */
export function descendants(pid: number): number[] {
  const children = parents();
  const out: number[] = [];
  for (let queue = [pid]; queue.length > 0;) {
    const next: number[] = [];
    for (const p of queue) for (const c of children.get(p) ?? []) { out.push(c); next.push(c); }
    queue = next;
  }
  return out;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/**
 * SIGTERM to the command and everything it started (not to bubblewrap nor its init, whose death
 * would end the namespace at once), then after `graceMs` SIGKILL to the namespace's init and to
 * bubblewrap. Returns a function that cancels the pending SIGKILL (call it once bwrap exited).
 */
export function killTree(bwrapPid: number, graceMs = 1_000): () => void {
  let tree: number[] = [];
  try {
    tree = descendants(bwrapPid);
  } catch {
    // no /proc: the SIGKILL below still ends bwrap, and --die-with-parent its child
  }
  const [init, ...rest] = tree;
  for (const p of rest) signal(p, 'SIGTERM');
  const hard = (): void => {
    if (init !== undefined) signal(init, 'SIGKILL');
    signal(bwrapPid, 'SIGKILL');
  };
  if (rest.length === 0) {
    hard();
    return () => undefined;
  }
  const timer = setTimeout(hard, graceMs);
  timer.unref();
  return () => clearTimeout(timer);
}
