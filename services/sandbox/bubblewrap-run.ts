// One bubblewrap process for one call, from spawn to result: output into its buffer, the "set up"
// byte on fd 4, the timeout and the abort signal, the process tree killed at the end. A call whose
// sandbox never came up (bwrap missing, set-up refused) ends `degraded`; anything after that is
// the command's own ending (`ok` with its exit code, `timeout`, `interrupted`).
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { channelLine, LineSplitter, lineTooLong } from './channel-lines.js';
import { killTree } from './process-tree.js';
import type { ExecResult, SandboxStatus } from './types.js';

/** Where output goes: CappedOutput (exec) or RollingOutput (start). */
export interface OutputSink {
  push(chunk: string): void;
  readonly truncated: boolean;
  text(): string;
}

export interface RunSpec {
  bwrap: string;
  /** Options for bubblewrap (sent through fd 3). */
  options: string[];
  /** The argv after `--`. */
  argv: string[];
  /** Host uid/gid bubblewrap runs as (when the worker is root). */
  uid?: number;
  gid?: number;
  stdin?: string;
  /**
   * A channel process: stdin stays open for `send`, stdout is split into lines for `onLine`, and
   * stderr (once the sandbox is up) is the output.
   */
  channel?: { onLine: (line: string) => void };
  timeoutMs: number;
  signal: AbortSignal;
  sink: OutputSink;
  started: number;
}

/** A running call. `ready` settles once the sandbox is set up, or the call ended before that. */
export interface Run {
  ready: Promise<void>;
  done: Promise<ExecResult>;
  kill(status: SandboxStatus, reason: string): void;
  /** A channel run: writes a line to its stdin, or closes it. */
  send?(line: string): void;
  end?(): void;
}

const BWRAP_ERR_MAX = 4_000;

export function degraded(reason: string, started: number): ExecResult {
  return { exitCode: -1, output: '', truncated: false, status: 'degraded', reason, durationMs: Date.now() - started };
}

function spawnError(err: NodeJS.ErrnoException, bwrap: string): string {
  if (err.code === 'ENOENT') return `bubblewrap (${bwrap}) is not installed, so the command did not run: install it (Debian: apt-get install -y bubblewrap) or use the kubernetes sandbox backend, then retry`;
  if (err.code === 'E2BIG') return 'the command line is too long to run (over 128 KiB): write it to a script file in /workspace and run that instead';
  return `bubblewrap (${bwrap}) could not be started (${err.code ?? err.message}), so the command did not run; retry, and if it persists check the worker's host`;
}

const setupError = (stderr: string) => `bubblewrap could not set up the sandbox, so the command did not run: ${stderr.trim() || 'no message'}. Check that user namespaces are enabled on this host (sysctl user.max_user_namespaces > 0) and that the sandbox uid can reach the workspace folder, then retry`;

function exitCodeOf(code: number | null, sig: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (sig ? constants.signals[sig] ?? 0 : 0);
}

/** Starts the call. Never throws: every failure becomes the `done` result. */
export function startRun(spec: RunSpec): Run {
  let child: ChildProcess;
  try {
    child = spawn(spec.bwrap, ['--args', '3', '--', ...spec.argv], {
      env: {},
      stdio: [spec.stdin !== undefined || spec.channel ? 'pipe' : 'ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
      ...(spec.uid !== undefined ? { uid: spec.uid, gid: spec.gid ?? spec.uid } : {}),
    });
  } catch (err) {
    const done = Promise.resolve(degraded(spawnError(err as NodeJS.ErrnoException, spec.bwrap), spec.started));
    return { ready: Promise.resolve(), done, kill: () => undefined };
  }
  return track(child, spec);
}

function track(child: ChildProcess, spec: RunSpec): Run {
  let isReady = false;
  let ended: { status: SandboxStatus; reason: string } | undefined;
  let cancelKill: () => void = () => undefined;
  let spawnFailure: string | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((r) => { markReady = r; });

  const [stdin, stdout, stderr, argsPipe, readyPipe] = child.stdio as [Writable | null, Readable, Readable, Writable, Readable];
  for (const s of [stdin, stdout, stderr, argsPipe, readyPipe]) s?.on('error', () => undefined);
  argsPipe.end(spec.options.map((o) => `${o}\0`).join(''));
  // Before the sandbox is up, stderr is bubblewrap's; a channel process's stderr after that is its output.
  let early = '';
  const onErr = (c: string): void => {
    if (spec.channel && isReady) return spec.sink.push(c);
    if (early.length < BWRAP_ERR_MAX) early += c.slice(0, BWRAP_ERR_MAX - early.length);
  };
  if (spec.channel) {
    const lines = new LineSplitter(spec.channel.onLine, () => kill('interrupted', lineTooLong));
    stdout.on('data', (c: Buffer) => lines.push(c));
  } else {
    if (stdin) stdin.end(spec.stdin);
    stdout.setEncoding('utf8');
    stdout.on('data', (c: string) => spec.sink.push(c));
  }
  stderr.setEncoding('utf8');
  stderr.on('data', onErr);
  readyPipe.once('data', () => {
    isReady = true;
    // Bytes read before the ready byte was seen came after it was written (the wrapper writes it first).
    if (spec.channel && early) { spec.sink.push(early); early = ''; }
    markReady(); readyPipe.destroy(); argsPipe.destroy();
  });

  const kill = (status: SandboxStatus, reason: string): void => {
    if (ended || child.exitCode !== null || child.signalCode !== null) return;
    ended = { status, reason };
    if (child.pid !== undefined) cancelKill = killTree(child.pid);
  };
  // setTimeout fires at once past 2^31-1 ms: clamp (foreground calls are capped at 600 s, background ones at a day).
  const timer = setTimeout(() => kill('timeout', `the command ran past its ${Math.round(spec.timeoutMs / 1000)} s limit and was killed`), Math.min(Math.max(0, spec.timeoutMs), 2_147_483_647));
  const onAbort = () => kill('interrupted', 'the command was interrupted (stopped by the user or the turn) and killed');
  spec.signal.addEventListener('abort', onAbort, { once: true });

  const done = new Promise<ExecResult>((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      cancelKill();
      spec.signal.removeEventListener('abort', onAbort);
      markReady();
    };
    // A failed spawn (ENOENT…) has no process: it may never emit 'close'.
    child.on('error', (err) => {
      spawnFailure = spawnError(err, spec.bwrap);
      if (child.pid === undefined) { finish(); resolve(degraded(spawnFailure, spec.started)); }
    });
    child.on('close', (code, sig) => {
      finish();
      if (spawnFailure) return resolve(degraded(spawnFailure, spec.started));
      if (!isReady && !ended) return resolve(degraded(setupError(early), spec.started));
      resolve({
        exitCode: exitCodeOf(code, sig),
        output: spec.sink.text(),
        truncated: spec.sink.truncated,
        status: ended?.status ?? 'ok',
        ...(ended ? { reason: ended.reason } : {}),
        durationMs: Date.now() - spec.started,
      });
    });
  });
  if (!spec.channel || !stdin) return { ready, done, kill };
  return {
    ready, done, kill,
    send: (line) => { if (stdin.writable) stdin.write(channelLine(line)); },
    end: () => { stdin.end(); },
  };
}
