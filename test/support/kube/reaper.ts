// Test-plane processes (etcd, kube-apiserver) carry two environment variables from their start:
// HERMES_TEST_PLANE_OWNER=<pid>:<start time> of the process that started them, and
// HERMES_TEST_RUN=<run id> of the test run. The reaper finds them in /proc and kills those whose
// owner is dead (a vitest fork that was SIGKILLed, a bench that crashed: any earlier run, any
// checkout) or that belong to a run that is over (a hook that timed out while a control plane was
// still starting). Temp folders of dead owners go too. See docs/harness.md.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const OWNER_ENV = 'HERMES_TEST_PLANE_OWNER';
export const RUN_ENV = 'HERMES_TEST_RUN';
/** The file in a test-plane temp folder naming its owner, for {@link reapTestPlane}. */
export const OWNER_FILE = '.hermes-test-plane-owner';
/** Prefixes of the temp folders (under os.tmpdir()) that the test plane makes. */
export const TEMP_PREFIXES = ['hermes-kube-', 'hermes-kubelet-'];

/** A process started by the test plane, as found in /proc. */
export interface MarkedProcess {
  pid: number;
  owner: string;
  run: string | undefined;
  command: string;
}

/** Fields of /proc/<pid>/stat after the command name: [0] is the state, [19] the start time. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** `<pid>:<start time in clock ticks>`: unique for the machine's uptime, unlike a pid alone. */
export function ownerId(pid = process.pid): string {
  const fields = statFields(pid);
  if (!fields) throw new Error(`no /proc/${pid}/stat: the test plane needs Linux's /proc`);
  return `${pid}:${fields[19]}`;
}

/** Whether the process an {@link ownerId} names still runs (a zombie does not). */
export function ownerAlive(owner: string): boolean {
  const [pid, start] = owner.split(':');
  const fields = statFields(Number(pid));
  return fields !== undefined && fields[0] !== 'Z' && fields[19] === start;
}

/** The environment marking a process started now by this process. */
export function markEnv(): Record<string, string> {
  const run = process.env[RUN_ENV];
  return { [OWNER_ENV]: ownerId(), ...(run ? { [RUN_ENV]: run } : {}) };
}

function environOf(pid: number): Map<string, string> | undefined {
  try {
    const env = new Map<string, string>();
    for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      const eq = entry.indexOf('=');
      if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
    }
    return env;
  } catch {
    return undefined; // gone, or another user's
  }
}

/** Every live process (not zombies) that carries the test-plane mark. */
export function markedProcesses(): MarkedProcess[] {
  const found: MarkedProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid || statFields(pid)?.[0] === 'Z') continue;
    const env = environOf(pid);
    const owner = env?.get(OWNER_ENV);
    if (!owner) continue;
    let command = '?';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '?';
    } catch {
      // exited while we looked
    }
    found.push({ pid, owner, run: env?.get(RUN_ENV), command });
  }
  return found;
}

/** Whether a process has exited (a zombie has: only its exit status is left). */
export function processGone(pid: number): boolean {
  const fields = statFields(pid);
  return fields === undefined || fields[0] === 'Z';
}

/** Options for {@link reapTestPlane}. */
export interface ReapOptions {
  /** Also kill the marked processes of this run, whose owners may be alive (the run is over). */
  run?: string;
  /** How long the killed processes get to disappear. @defaultValue 10_000 */
  timeoutMs?: number;
}

/**
 * SIGKILLs every marked process whose owner is dead or whose run is `opts.run`, waits until
 * they are gone, removes test-plane temp folders of dead owners, and returns what it killed.
 * Throws if a process survives SIGKILL for `timeoutMs`.
 */
export async function reapTestPlane(opts: ReapOptions = {}): Promise<MarkedProcess[]> {
  const victims = markedProcesses().filter((p) => (opts.run !== undefined && p.run === opts.run) || !ownerAlive(p.owner));
  for (const p of victims) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  while (victims.some((p) => !processGone(p.pid))) {
    if (Date.now() > deadline) {
      const left = victims.filter((p) => !processGone(p.pid)).map((p) => `${p.pid} ${p.command}`);
      throw new Error(`test-plane processes survived SIGKILL: ${left.join(', ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  removeDeadOwnersFolders();
  return victims;
}

function removeDeadOwnersFolders(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!TEMP_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    const dir = join(tmpdir(), name);
    let owner: string;
    try {
      owner = readFileSync(join(dir, OWNER_FILE), 'utf8').trim();
    } catch {
      continue; // not ours to judge (no owner file)
    }
    if (!ownerAlive(owner)) rmSync(dir, { recursive: true, force: true });
  }
}

/** One line for people: what the reaper killed. */
export function describeReaped(reaped: MarkedProcess[]): string {
  return reaped.map((p) => `${p.command.split('/').pop()} (pid ${p.pid}, owner ${p.owner}${p.run ? `, run ${p.run}` : ''})`).join(', ');
}
