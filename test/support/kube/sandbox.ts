import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, lstatSync, mkdirSync, openSync, readlinkSync } from 'node:fs';
import type { Bind } from './podVolumes.js';
import { markEnv } from './reaper.js';

/** What to run inside bubblewrap. */
export interface SandboxSpec {
  argv: string[];
  env: Record<string, string>;
  hostname: string;
  /** Working directory inside the sandbox; backed by `workdirSource` unless a bind covers it. */
  workingDir: string;
  workdirSource: string;
  binds: Bind[];
  /** Keep the host network (otherwise `--unshare-net`: loopback only). */
  network: boolean;
  /** stdout and stderr are appended here. */
  logFile: string;
}

/** A running sandboxed process. */
export interface Sandbox {
  pid: number;
  /** Exit code, or 128+signal when killed. */
  exited: Promise<number>;
  kill(): void;
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Read-only host system dirs; merged-/usr symlinks (/bin -> usr/bin) are recreated as symlinks. */
function systemDirs(): string[] {
  const args = ['--ro-bind', '/usr', '/usr', '--ro-bind', '/etc', '/etc', '--ro-bind-try', '/opt', '/opt'];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib64', '/lib32']) {
    try {
      if (lstatSync(dir).isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
      else args.push('--ro-bind', dir, dir);
    } catch {
      // absent on this distribution
    }
  }
  return args;
}

/** The environment a container's processes see: cleared, then PATH, HOSTNAME and its `env`. */
export function sandboxEnv(spec: Pick<SandboxSpec, 'env' | 'hostname'>): Record<string, string> {
  return { PATH: DEFAULT_PATH, HOSTNAME: spec.hostname, ...spec.env };
}

const covers = (bind: Bind, path: string): boolean => path === bind.target || path.startsWith(`${bind.target.replace(/\/$/, '')}/`);

/** bubblewrap argv: fresh root, private /tmp, pid/ipc/uts (and usually net) namespaces. */
export function bwrapArgs(spec: SandboxSpec): string[] {
  const args = ['--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
    '--hostname', spec.hostname, ...(spec.network ? [] : ['--unshare-net']),
    ...systemDirs(), '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp'];
  if (spec.workingDir !== '/' && !spec.binds.some((b) => covers(b, spec.workingDir))) {
    mkdirSync(spec.workdirSource, { recursive: true });
    args.push('--bind', spec.workdirSource, spec.workingDir);
  }
  // Parents before children, as container runtimes order mounts: a Pod's emptyDir at /tmp must not
  // hide a read-only path below it (a checkout cloned under /tmp, mapped into the image).
  const depth = (b: Bind) => b.target.split('/').filter(Boolean).length;
  for (const bind of [...spec.binds].sort((a, b) => depth(a) - depth(b))) args.push(bind.readOnly ? '--ro-bind' : '--bind', bind.source, bind.target);
  args.push('--chdir', spec.workingDir, '--clearenv');
  for (const [key, value] of Object.entries(sandboxEnv(spec))) args.push('--setenv', key, value);
  return [...args, '--', ...spec.argv];
}

/** Starts `spec.argv` inside bubblewrap (/usr/bin/bwrap), marked as a test-plane process. */
export function startSandbox(spec: SandboxSpec): Sandbox {
  const fd = openSync(spec.logFile, 'a');
  let child: ChildProcess;
  try {
    // --die-with-parent ends it with this process; the mark lets reaper.ts find it otherwise.
    child = spawn('bwrap', bwrapArgs(spec), { stdio: ['ignore', fd, fd], env: { ...process.env, ...markEnv() } });
  } finally {
    closeSync(fd);
  }
  const exited = new Promise<number>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? (signal === 'SIGKILL' ? 137 : 143)));
    child.on('error', () => resolve(127));
  });
  return { pid: child.pid ?? -1, exited, kill: () => { child.kill('SIGKILL'); } };
}
