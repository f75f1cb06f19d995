// The bubblewrap backend (`hermes dev`, single-machine installs): one namespaced process per call
// (user, PID, mount, IPC, UTS and — unless allowed — network namespaces), the session's folder
// at /workspace, nothing of the host but its program folders read-only and a synthetic /etc, an
// unprivileged uid with no capabilities, an empty environment. See docs/sandbox.md.
import { join, posix, resolve } from 'node:path';
import type { Config } from '../core/index.js';
import { bwrapOptions, systemDirArgs, wrapperArgv, type SandboxLimits } from './bubblewrap-args.js';
import { degraded, startRun, type OutputSink, type Run } from './bubblewrap-run.js';
import { CappedOutput, RollingOutput } from './output.js';
import { ensureSandboxEtc } from './sandbox-etc.js';
import { WORKSPACE_PATH, type ChannelRequest, type ExecRequest, type ExecResult, type RunningCommand, type Sandbox, type SandboxChannel } from './types.js';
import { ensureWorkspaceDir, invalidSessionNames, unreachableAncestor, type WorkspaceOwner } from './workspace-dir.js';

/** What `egress: allowlist` means here: bubblewrap cannot filter by destination. */
export type BubblewrapAllowlist = 'refuse' | 'host';

export interface BubblewrapOptions {
  /** Folder holding one folder per session (`<root>/<namespace>/<agent>/<session>`). */
  workspacesDir: string;
  /** @defaultValue 'bwrap' (from PATH) */
  bwrap?: string;
  /** Host uid (and gid) sandboxes run as when the worker is root. @defaultValue 65534 (nobody) */
  sandboxUid?: number;
  /**
   * `refuse`: a call with `egress: allowlist` is `degraded` (nothing runs). `host`: it shares the
   * host's network unfiltered, loopback services included. @defaultValue 'refuse'
   */
  allowlist?: BubblewrapAllowlist;
  /** @defaultValue processes 256, files 4 GiB, address space unlimited, 4096 open files */
  limits?: Partial<SandboxLimits>;
  /** Size of the private /tmp (tmpfs, in memory). @defaultValue 512 MiB */
  tmpBytes?: number;
}

const DEFAULT_LIMITS: SandboxLimits = { processes: 256, fileBytes: 4 * 1024 ** 3, memoryBytes: 0, openFiles: 4096 };
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why this request cannot run (bad cwd, env, NUL bytes, refused network), or undefined. */
function refusal(req: Omit<ExecRequest, 'stdin'>, allowlist: BubblewrapAllowlist): string | undefined {
  const names = invalidSessionNames(req.session);
  if (names) return `invalid sandbox session: ${names}`;
  const cwd = req.cwd ?? WORKSPACE_PATH;
  const norm = posix.normalize(cwd);
  if (!cwd.startsWith('/') || (norm !== WORKSPACE_PATH && !norm.startsWith(`${WORKSPACE_PATH}/`))) {
    return `the working directory ${JSON.stringify(cwd)} is outside ${WORKSPACE_PATH}: give an absolute path under ${WORKSPACE_PATH}`;
  }
  if (`${req.command}${cwd}`.includes('\0')) return 'the command contains a NUL byte: remove it';
  for (const [k, v] of Object.entries(req.env ?? {})) {
    if (!ENV_NAME.test(k)) return `environment variable name ${JSON.stringify(k)} is invalid: use letters, digits and _`;
    if (v.includes('\0')) return `environment variable ${k} contains a NUL byte: remove it`;
  }
  if (req.network.egress === 'allowlist' && allowlist === 'refuse') {
    return 'this Profile allows network egress to a list of destinations, which the bubblewrap sandbox cannot enforce (it has no network or the whole host network); use the kubernetes backend, set network.egress: none, or set HERMES_BWRAP_ALLOWLIST=host to share the host network unfiltered';
  }
  return undefined;
}

class BubblewrapSandbox implements Sandbox {
  readonly backend = 'bubblewrap' as const;
  private readonly root: string;
  private readonly bwrap: string;
  private readonly owner: WorkspaceOwner | undefined;
  private readonly allowlist: BubblewrapAllowlist;
  private readonly limits: SandboxLimits;
  private readonly tmpBytes: number;
  private readonly systemDirs = systemDirArgs();
  private readonly running = new Set<Run>();
  private readonly etcDirs = new Map<boolean, string>();
  private closed = false;

  constructor(o: BubblewrapOptions) {
    this.root = resolve(o.workspacesDir);
    this.bwrap = o.bwrap ?? 'bwrap';
    // Only root can switch uid; any other worker's sandboxes run as the worker's own uid.
    const uid = o.sandboxUid ?? 65534;
    if (!Number.isInteger(uid) || uid <= 0) throw new Error(`bubblewrap sandbox: sandboxUid must be a non-root uid, got ${uid}`);
    this.owner = process.getuid?.() === 0 ? { uid, gid: uid } : undefined;
    this.allowlist = o.allowlist ?? 'refuse';
    this.limits = { ...DEFAULT_LIMITS, ...o.limits };
    this.tmpBytes = o.tmpBytes ?? 512 * 1024 ** 2;
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    return this.launch(req, new CappedOutput(req.maxOutputChars)).done;
  }

  async start(req: ExecRequest): Promise<RunningCommand> {
    const sink = new RollingOutput(req.maxOutputChars);
    const run = this.launch(req, sink);
    await run.ready;
    return {
      output: () => ({ text: sink.text(), truncated: sink.truncated }),
      done: run.done,
      kill: () => run.kill('interrupted', 'the command was killed'),
    };
  }

  async open(req: ChannelRequest): Promise<SandboxChannel> {
    const sink = new CappedOutput(req.maxOutputChars);
    const run = this.launch(req, sink, { onLine: req.onLine });
    await run.ready;
    return {
      send: (line) => run.send?.(line),
      end: () => run.end?.(),
      output: () => ({ text: sink.text(), truncated: sink.truncated }),
      done: run.done,
      kill: () => run.kill('interrupted', 'the process was killed'),
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const runs = [...this.running];
    for (const r of runs) r.kill('interrupted', 'the worker is shutting down; the command was killed');
    await Promise.all(runs.map((r) => r.done));
  }

  private launch(req: ExecRequest | ChannelRequest, sink: OutputSink, channel?: { onLine: (line: string) => void }): Run {
    const started = Date.now();
    const early = (result: ExecResult): Run => ({ ready: Promise.resolve(), done: Promise.resolve(result), kill: () => undefined });
    if (this.closed) return early(degraded('the sandbox backend is shut down (the worker is stopping); retry on another worker', started));
    const why = refusal(req, this.allowlist);
    if (why) return early(degraded(why, started));
    if (req.signal.aborted) return early({ ...degraded('', started), status: 'interrupted', reason: 'the call was interrupted before the command started' });
    let workspaceDir: string;
    let etcDir: string;
    const network = req.network.egress === 'allowlist';
    try {
      workspaceDir = ensureWorkspaceDir(this.root, req.session, this.owner);
      etcDir = this.etcDirs.get(network) ?? ensureSandboxEtc(join(this.root, '.system'), network);
      this.etcDirs.set(network, etcDir);
      const blocked = this.owner && unreachableAncestor(workspaceDir, this.owner);
      if (blocked) return early(degraded(`the sandbox uid ${this.owner!.uid} cannot enter ${blocked}, so bubblewrap cannot bind the workspace; set HERMES_WORKSPACES_DIR to a folder whose parents others may pass (e.g. /var/lib/hermes/workspaces), then retry`, started));
    } catch (err) {
      return early(degraded(`the workspace folder under ${this.root} could not be prepared (${(err as Error).message}); check the disk and HERMES_WORKSPACES_DIR, then retry`, started));
    }
    const plan = { workspaceDir, etcDir, network, env: req.env ?? {}, cwd: req.cwd ?? WORKSPACE_PATH, command: req.command, limits: this.limits, tmpBytes: this.tmpBytes };
    const run = startRun({
      bwrap: this.bwrap, options: bwrapOptions(plan, this.systemDirs), argv: wrapperArgv(plan, channel !== undefined),
      ...(this.owner ? { uid: this.owner.uid, gid: this.owner.gid } : {}),
      ...('stdin' in req && req.stdin !== undefined ? { stdin: req.stdin } : {}),
      ...(channel ? { channel } : {}),
      timeoutMs: req.timeoutMs, signal: req.signal, sink, started,
    });
    this.running.add(run);
    void run.done.then(() => this.running.delete(run));
    return run;
  }
}

/** The bubblewrap backend. Construction touches nothing; folders are created on first use. */
export function bubblewrapSandbox(options: BubblewrapOptions): Sandbox {
  return new BubblewrapSandbox(options);
}

/** The bubblewrap backend with the process's settings (HERMES_WORKSPACES_DIR, HERMES_BWRAP_UID, HERMES_BWRAP_*). */
export function bubblewrapSandboxFromConfig(config: Config, options: Partial<BubblewrapOptions> = {}): Sandbox {
  return bubblewrapSandbox({
    workspacesDir: config.HERMES_WORKSPACES_DIR,
    sandboxUid: config.HERMES_BWRAP_UID,
    bwrap: config.HERMES_BWRAP_PATH,
    allowlist: config.HERMES_BWRAP_ALLOWLIST,
    ...options,
  });
}
