import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
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

// A test worker that dies without calling stop() must not leave etcd/kube-apiserver behind.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * Starts `command` with its output appended to `logFile`. Killed when this process exits,
 * unless `detached` (the dev control plane outlives the script that starts it).
 */
export function startLogged(name: string, command: string, args: string[], logFile: string, detached = false): LoggedProcess {
  const fd = openSync(logFile, 'a');
  const child = spawn(command, args, { stdio: ['ignore', fd, fd], detached });
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

/** Returns a loopback TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

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
    throw new Error(`${(err as Error).message}\n--- last lines of ${proc.logFile} ---\n${proc.tail()}`, { cause: err });
  }
}
