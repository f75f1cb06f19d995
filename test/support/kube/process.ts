import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { markEnv } from './reaper.js';
import { waitFor } from './wait.js';

/** A child process whose stdout and stderr go to a log file. */
export interface LoggedProcess {
  name: string;
  child: ChildProcess;
  logFile: string;
  /** Resolves with the exit code (or 128+signal) once the process has exited. */
  exited: Promise<number>;
  /** The last `lines` lines of its log, for error messages. */
  tail(lines?: number): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

// A test worker that exits without calling stop() must not leave etcd/kube-apiserver behind.
// That is three guards deep: this 'exit' handler (a normal exit); the parent-death signal (the
// worker was SIGKILLed or ended by a signal, which skips 'exit' handlers); and the mark that
// reaper.ts finds in /proc (a machine without setpriv, or a run that is over while its worker
// lives on, e.g. after a hook timed out).
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

// util-linux's setpriv sets PR_SET_PDEATHSIG and execs the command (same pid): the child gets
// SIGKILL when the thread that spawned it — Node's main thread — ends, however it ends.
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/**
 * Starts `command` with its output appended to `logFile`. Unless `detached` (the dev control
 * plane outlives the script that starts it), the child is marked for the reaper and dies with
 * this process.
 */
export function startLogged(name: string, command: string, args: string[], logFile: string, detached = false): LoggedProcess {
  const fd = openSync(logFile, 'a');
  const [file, argv] = !detached && SETPRIV ? [SETPRIV, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
  const child = spawn(file, argv, { stdio: ['ignore', fd, fd], detached, env: detached ? process.env : { ...process.env, ...markEnv() } });
  closeSync(fd);
  if (detached) child.unref();
  else live.add(child);
  let exitCode: number | undefined;
  const exited = new Promise<number>((resolve) => {
    child.on('exit', (code, signal) => {
      live.delete(child);
      exitCode = code ?? 128 + (SIGNALS[signal ?? ''] ?? 0);
      resolve(exitCode);
    });
    child.on('error', () => resolve(exitCode ?? 127));
  });
  const tail = (lines = 40): string => {
    try {
      return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  };
  const stop = async (graceMs = 5_000): Promise<void> => {
    if (exitCode !== undefined || child.exitCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { name, child, logFile, exited, tail, stop };
}

/** The process exited before it was ready (the error's message has its log tail). */
export class ExitedBeforeReady extends Error {}

/** Waits until `check` passes; throws with the log tail if the process exits first or the time runs out. */
export async function waitReady(proc: LoggedProcess, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  let exitCode: number | undefined;
  void proc.exited.then((code) => { exitCode = code; });
  try {
    await waitFor(check, {
      what: `${proc.name} to become ready`, timeoutMs, intervalMs: 250,
      bail: () => (exitCode === undefined ? undefined : new Error(`${proc.name} exited with code ${exitCode} before it was ready`)),
    });
  } catch (err) {
    await proc.stop(1_000);
    const message = `${(err as Error).message}\n--- last lines of ${proc.logFile} ---\n${proc.tail()}`;
    throw exitCode === undefined ? new Error(message, { cause: err }) : new ExitedBeforeReady(message, { cause: err });
  }
}
