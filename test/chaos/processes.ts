// Real `hermes` processes for the fault-injection suite: spawned with an explicit environment,
// their output appended to one log file each, killed by pid. Every process a group started is
// SIGKILLed when the group closes — and when the test process exits, whatever a failed check
// left behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/hermes.js', import.meta.url));

export type Role = 'gateway' | 'worker' | 'migrate';

export interface Exit { code: number | null; signal: NodeJS.Signals | null }

export interface Proc {
  role: Role;
  /** Unique in the group: `worker-3`. */
  name: string;
  /** Spawn generation in the group (1, 2, …): part of the name and of the worker's model URL. */
  gen: number;
  pid: number;
  child: ChildProcess;
  log: string;
  /** Resolves when the process has exited. */
  exited: Promise<Exit>;
  readonly alive: boolean;
}

/** Every child of this test process, so none outlives it. */
const everyChild = new Set<ChildProcess>();
let exitHook = false;
function killOnExit(child: ChildProcess): void {
  everyChild.add(child);
  child.once('exit', () => everyChild.delete(child));
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const c of everyChild) if (c.pid) try { process.kill(c.pid, 'SIGKILL'); } catch { /* gone */ }
  });
}

export class ProcessGroup {
  private readonly procs: Proc[] = [];
  private readonly streams: WriteStream[] = [];
  private gen = 0;

  constructor(readonly logDir: string) {}

  /** Starts `hermes <role> [args]` with exactly `env` (plus PATH); `env` may depend on the generation. */
  spawn(role: Role, env: Record<string, string> | ((gen: number) => Record<string, string>), args: string[] = []): Proc {
    const gen = ++this.gen;
    if (typeof env === 'function') env = env(gen);
    const name = `${role}-${gen}`;
    const log = join(this.logDir, `${name}.log`);
    const out = createWriteStream(log, { flags: 'a' });
    this.streams.push(out);
    const child = spawn(process.execPath, [bin, role, ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    killOnExit(child);
    child.stdout!.pipe(out, { end: false });
    child.stderr!.pipe(out, { end: false });
    const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    if (child.pid === undefined) throw new Error(`could not start ${name}`);
    const proc: Proc = {
      role, name, gen, pid: child.pid, child, log, exited,
      get alive() { return child.exitCode === null && child.signalCode === null; },
    };
    this.procs.push(proc);
    return proc;
  }

  /** Sends `signal` to the process (by pid) and waits until it has exited. */
  async kill(proc: Proc, signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    if (proc.alive) try { process.kill(proc.pid, signal); } catch { /* already gone */ }
    return proc.exited;
  }

  live(role?: Role): Proc[] {
    return this.procs.filter((p) => p.alive && (role === undefined || p.role === role));
  }

  all(): readonly Proc[] {
    return this.procs;
  }

  /** The last `lines` lines of a process's log (for a failure report). */
  static async tail(proc: Proc, lines = 30): Promise<string> {
    const text = await readFile(proc.log, 'utf8').catch(() => '');
    return text.split('\n').slice(-lines - 1).join('\n');
  }

  /** SIGTERM to every live process, SIGKILL to those still running after `graceMs`. */
  async close(graceMs = 5_000): Promise<void> {
    const live = this.live();
    for (const p of live) try { process.kill(p.pid, 'SIGTERM'); } catch { /* gone */ }
    const timer = setTimeout(() => { for (const p of this.live()) try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }, graceMs);
    await Promise.all(live.map((p) => p.exited));
    clearTimeout(timer);
    await Promise.all(this.streams.map((s) => new Promise<void>((r) => s.end(r))));
  }
}
