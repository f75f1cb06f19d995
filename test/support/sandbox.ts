// A SessionSandbox for tool tests: real `/bin/sh -c` commands in a temporary folder that stands
// for /workspace (a `cwd` under /workspace is mapped onto it).
//
// REPLACED BY THE BUBBLEWRAP BACKEND AT MERGE: this runner isolates nothing (no namespaces, the
// host's file system is visible); it exists so the tool tests run real shell commands while the
// bubblewrap backend is written in parallel. Tools never depend on it: they speak /workspace
// paths only (cwd /workspace, paths relative to it), which both this runner and the real
// backends understand. A spawn failure is reported as `degraded`, as a backend must.
import { spawn } from 'node:child_process';
import { lchown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import {
  CappedOutput, RollingOutput, WORKSPACE_PATH, type ExecResult, type RunningCommand, type SandboxBackendName, type SessionCommand, type SessionSandbox,
} from '../../services/sandbox/index.js';

export interface TestSandboxOptions {
  /** The folder that stands for /workspace. @defaultValue a new temporary folder */
  root?: string;
  /** @defaultValue 180 */
  timeoutSeconds?: number;
  /** The backend the tools are told they talk to (some limits depend on it). @defaultValue bubblewrap */
  backend?: SandboxBackendName;
  /** @defaultValue 100 000 */
  maxOutputChars?: number;
  /** Who owns the fixtures `put`/`mkdir`/`symlink` make (a backend's sandbox uid). @defaultValue the test's own */
  owner?: { uid: number; gid: number };
  /** The shell; a missing one makes every call `degraded` (a backend that cannot run anything). @defaultValue /bin/sh */
  shell?: string;
}

export interface TestSessionSandbox extends SessionSandbox {
  /** The host folder standing for /workspace. */
  readonly root: string;
  /** Commands started so far (run and start). */
  readonly calls: SessionCommand[];
  /** Test fixtures in the workspace (`rel` under /workspace), parents created, owned as the backend needs. */
  put(rel: string, content: string | Buffer): Promise<void>;
  mkdir(rel: string): Promise<void>;
  symlink(target: string, rel: string): Promise<void>;
  cleanup(): Promise<void>;
}

/** Creates `rel`'s parents under `root`, giving each new one to `owner`. */
async function parents(root: string, rel: string, owner?: { uid: number; gid: number }): Promise<string> {
  const abs = join(root, rel);
  const first = await mkdir(dirname(abs), { recursive: true });
  if (first && owner) {
    const parts = relative(root, dirname(abs)).split(sep);
    const from = relative(root, first).split(sep).length;
    for (let i = from; i <= parts.length; i++) await lchown(join(root, ...parts.slice(0, i)), owner.uid, owner.gid);
  }
  return abs;
}

type Sink = { push(s: string): void };

function hostCwd(root: string, cwd = WORKSPACE_PATH): string | undefined {
  if (cwd === WORKSPACE_PATH) return root;
  return cwd.startsWith(`${WORKSPACE_PATH}/`) ? join(root, cwd.slice(WORKSPACE_PATH.length)) : undefined;
}

interface Spawned { done: Promise<ExecResult>; kill(): void }

function launch(root: string, shell: string, cmd: SessionCommand, timeoutMs: number, sink: Sink, finish: () => { output: string; truncated: boolean }, signal: AbortSignal): Spawned {
  const started = Date.now();
  const cwd = hostCwd(root, cmd.cwd);
  const degraded = (reason: string): ExecResult => ({ exitCode: -1, output: '', truncated: false, status: 'degraded', reason, durationMs: Date.now() - started });
  if (!cwd) return { done: Promise.resolve(degraded(`cwd ${String(cmd.cwd)} is not under ${WORKSPACE_PATH}`)), kill: () => undefined };
  const child = spawn(shell, ['-c', cmd.command], { cwd, detached: true, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, LANG: 'C.UTF-8', ...cmd.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let status: ExecResult['status'] = 'ok';
  let reason: string | undefined;
  const killGroup = (sig: NodeJS.Signals) => { try { if (child.pid) process.kill(-child.pid, sig); } catch { /* gone */ } };
  const end = (s: ExecResult['status'], why: string) => { if (status === 'ok') { status = s; reason = why; } killGroup('SIGKILL'); };
  const timer = setTimeout(() => end('timeout', `killed after ${timeoutMs} ms`), timeoutMs);
  const onAbort = () => end('interrupted', 'the call was stopped');
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  child.stdout.setEncoding('utf8').on('data', (d: string) => sink.push(d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => sink.push(d));
  child.stdin.on('error', () => undefined);
  child.stdin.end(cmd.stdin ?? '');
  const done = new Promise<ExecResult>((resolve) => {
    child.on('error', (err) => { clearTimeout(timer); resolve(degraded(`could not start ${shell}: ${err.message}`)); });
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      const exitCode = code ?? 128 + (sig ? (({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2 }) as Record<string, number>)[sig] ?? 0 : 0);
      resolve({ exitCode, ...finish(), status, ...(reason ? { reason } : {}), durationMs: Date.now() - started });
    });
  });
  return { done, kill: () => { if (status === 'ok') { status = 'interrupted'; reason = 'killed'; } killGroup('SIGTERM'); setTimeout(() => killGroup('SIGKILL'), 1_000).unref(); } };
}

/** A SessionSandbox over a temporary folder (see the file comment: replaced by bubblewrap at merge). */
export async function testSessionSandbox(opts: TestSandboxOptions = {}): Promise<TestSessionSandbox> {
  const root = opts.root ?? await mkdtemp(join(tmpdir(), 'hermes-ws-'));
  const timeoutSeconds = opts.timeoutSeconds ?? 180;
  const maxOutputChars = opts.maxOutputChars ?? 100_000;
  const shell = opts.shell ?? '/bin/sh';
  const calls: SessionCommand[] = [];
  const limit = (cmd: SessionCommand) => Math.min(cmd.timeoutMs ?? timeoutSeconds * 1_000, 600_000);
  return {
    backend: opts.backend ?? 'bubblewrap',
    timeoutSeconds,
    root,
    calls,
    run(cmd, signal) {
      calls.push(cmd);
      const out = new CappedOutput(cmd.maxOutputChars ?? maxOutputChars);
      return launch(root, shell, cmd, limit(cmd), out, () => ({ output: out.text(), truncated: out.truncated }), signal).done;
    },
    start(cmd, signal): Promise<RunningCommand> {
      calls.push(cmd);
      const out = new RollingOutput(cmd.maxOutputChars ?? maxOutputChars);
      const s = launch(root, shell, cmd, limit(cmd), out, () => ({ output: out.text(), truncated: out.truncated }), signal);
      return Promise.resolve({ output: () => ({ text: out.text(), truncated: out.truncated }), done: s.done, kill: s.kill });
    },
    async put(rel, content) {
      const abs = await parents(root, rel, opts.owner);
      await writeFile(abs, content);
      if (opts.owner) await lchown(abs, opts.owner.uid, opts.owner.gid);
    },
    async mkdir(rel) {
      const abs = await parents(root, rel, opts.owner);
      await mkdir(abs, { recursive: true });
      if (opts.owner) await lchown(abs, opts.owner.uid, opts.owner.gid);
    },
    async symlink(target, rel) {
      const abs = await parents(root, rel, opts.owner);
      await symlink(target, abs);
      if (opts.owner) await lchown(abs, opts.owner.uid, opts.owner.gid);
    },
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}
