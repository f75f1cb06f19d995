// The one interface terminal and file tools run through. A backend runs one command in a fresh,
// isolated place (a Pod, a bubblewrap namespace) with the session's workspace at /workspace, and
// reports how it ended. Backends never throw for the command's own failures: a non-zero exit is
// `ok` with its exit code; a backend that could not run the command at all says `degraded` with a
// reason and a retry hint, so the tool result tells the model the command did not run.

/** Where the session's files live inside every sandbox. */
export const WORKSPACE_PATH = '/workspace';
/** SPEC: foreground commands time out after 180 s by default, 600 s at most. */
export const DEFAULT_TIMEOUT_SECONDS = 180;
export const MAX_TIMEOUT_SECONDS = 600;
/** A background command (`start`) may run longer — that is what it is for — up to a day (Hermes' limit). */
export const MAX_BACKGROUND_SECONDS = 86_400;

export type SandboxBackendName = 'kubernetes' | 'bubblewrap';

/**
 * `ok`: the command ran to its end (any exit code). `timeout`: it was killed at `timeoutMs`.
 * `interrupted`: the signal aborted it (`/stop`, an interrupt, a fenced turn). `degraded`: the
 * backend failed (quota, image pull, no node, bwrap missing) — the command may not have started.
 */
export type SandboxStatus = 'ok' | 'timeout' | 'interrupted' | 'degraded';

/** Whose call this is: names the sandbox's labels and its workspace. */
export interface SandboxSession {
  /** The Agent's namespace (a cluster namespace, or the manifest's namespace in `hermes dev`). */
  namespace: string;
  /** The Agent's name. */
  agent: string;
  /** The session id (a UUID from `sessions`): one workspace per session. */
  sessionId: string;
  /** The admission (turn) id the call belongs to (a UUID from `admissions`). */
  admissionId: string;
}

/** The session workspace's settings (Profile `spec.sandbox.workspace`). */
export interface WorkspaceSettings {
  /** Volume size as a Kubernetes quantity (`10Gi`); the bubblewrap backend ignores it. */
  size: string;
  /** Seconds of disuse after which the workspace may be deleted. */
  ttlSeconds: number;
}

/** Egress (Profile `spec.sandbox.network`): nothing, or only what is listed. */
export interface SandboxNetwork {
  egress: 'none' | 'allowlist';
  /** `cidr/port` or `host:port` entries; only with `allowlist`. */
  allow: string[];
}

/**
 * Where and how a Pod runs (Profile `spec.sandbox`: image, namespace, resources,
 * runtimeClassName). Only the kubernetes backend reads it; absent fields take the install's
 * defaults (HERMES_SANDBOX_* settings).
 */
export interface SandboxPodSettings {
  image?: string;
  /** Namespace of the sandbox Pods and workspace PVCs. @defaultValue the session's (the Agent's) namespace */
  namespace?: string;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  runtimeClassName?: string;
  /**
   * Mode session: the session keeps one sandbox of the Profile's agent-sandbox warm pool
   * (SandboxTemplate + SandboxWarmPool named after the Profile), idled out after `idleSeconds`.
   * Absent: a Pod per call.
   */
  session?: { profile: string; idleSeconds: number };
}

export interface ExecRequest {
  session: SandboxSession;
  workspace: WorkspaceSettings;
  /** A shell command line, run by `/bin/sh -c` inside the sandbox. */
  command: string;
  /**
   * Working directory inside the sandbox, absolute and under /workspace. @defaultValue /workspace,
   * or in a session sandbox (mode session) the directory the session's last command without a
   * `cwd` ended in
   */
  cwd?: string;
  /** Extra environment variables (never the worker's own environment). */
  env?: Record<string, string>;
  /** Text written to the command's standard input, then closed (file tools send content this way). */
  stdin?: string;
  /** Wall-clock limit of the command; the backend kills it then and answers `timeout`. */
  timeoutMs: number;
  /** Aborting kills the command (within ~1 s) and answers `interrupted`. */
  signal: AbortSignal;
  network: SandboxNetwork;
  /** Most characters of output kept (stdout and stderr interleaved); the rest is cut, `truncated` set. */
  maxOutputChars: number;
  /** Kubernetes backend only: the Profile's Pod settings. */
  pod?: SandboxPodSettings;
}

export interface ExecResult {
  /** The command's exit code; 128+n when killed by signal n; -1 when it did not run (degraded). */
  exitCode: number;
  /** stdout and stderr, interleaved as written, at most `maxOutputChars` characters. */
  output: string;
  truncated: boolean;
  status: SandboxStatus;
  /** Why the status is not `ok` (and, for `degraded`, what to do). */
  reason?: string;
  /** How long the call took, from request to result (ms). */
  durationMs: number;
}

/** A command started in the background (`terminal` with `background: true`, then `process`). */
export interface RunningCommand {
  /** The output so far (rolling: the newest `maxOutputChars` characters are kept). */
  output(): { text: string; truncated: boolean };
  /** Settles when the command ends; never rejects (a backend failure is a `degraded` result). */
  readonly done: Promise<ExecResult>;
  /** Ends the command (SIGTERM, then SIGKILL after 1 s; a Pod is deleted). */
  kill(): void;
}

export interface Sandbox {
  readonly backend: SandboxBackendName;
  /** Runs a command to its end (or timeout, or abort). */
  exec(req: ExecRequest): Promise<ExecResult>;
  /**
   * Starts a command and returns once it runs (or has failed to start: then `done` is already
   * settled as `degraded`). `timeoutMs` still bounds it; `signal` still ends it.
   */
  start(req: ExecRequest): Promise<RunningCommand>;
  /** Stops whatever this backend still runs (worker shutdown). */
  close(): Promise<void>;
  /**
   * Starts a process with a line channel to the worker (see ChannelRequest). Absent on a backend
   * that cannot offer one; then tools needing it say so.
   */
  open?(req: ChannelRequest): Promise<SandboxChannel>;
}

/** The longest line either side of a channel may send (a longer one ends the process). */
export const MAX_CHANNEL_LINE_BYTES = 8 * 1024 * 1024;

/**
 * A process with a request/response line channel to the worker: its standard input and standard
 * output carry newline-terminated UTF-8 lines (JSON, say) in both directions; its standard error
 * is its output (capped at `maxOutputChars`, the `output` of the result). `stdin` of ExecRequest
 * is not used: the worker writes with `send`. Both backends run the process exactly as `exec`
 * would (same namespaces or Pod, same workspace, same limits, no inherited environment).
 */
export interface ChannelRequest extends Omit<ExecRequest, 'stdin'> {
  /** Called once per line the process writes to its standard output (without the newline). */
  onLine: (line: string) => void;
}

/** A running channel process (`open`). */
export interface SandboxChannel {
  /** Writes one line (a newline is added; the line must hold none) to the process's standard input. */
  send(line: string): void;
  /** Closes the process's standard input. */
  end(): void;
  /** Its standard error so far. */
  output(): { text: string; truncated: boolean };
  /** Settles when the process ends; never rejects (a backend failure is a `degraded` result). */
  readonly done: Promise<ExecResult>;
  /** Ends it (SIGKILL; a Pod is deleted); `done` then says `interrupted`. */
  kill(): void;
}

/** A command as a tool asks for it; the session, workspace, network and limits are bound already. */
export interface SessionCommand {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  /** @defaultValue the Profile's `timeoutSeconds` */
  timeoutMs?: number;
  /** @defaultValue the tool-result budget */
  maxOutputChars?: number;
}

/** One session's sandbox, as tools see it (ToolContext.sandbox). */
export interface SessionSandbox {
  readonly backend: SandboxBackendName;
  /** The Profile's foreground limit (s). */
  readonly timeoutSeconds: number;
  run(cmd: SessionCommand, signal: AbortSignal): Promise<ExecResult>;
  start(cmd: SessionCommand, signal: AbortSignal): Promise<RunningCommand>;
  /** A process with a line channel (see ChannelRequest); absent when the backend has none. */
  open?(cmd: SessionChannelCommand, signal: AbortSignal): Promise<SandboxChannel>;
}

/** A channel process as a tool asks for it. */
export interface SessionChannelCommand extends Omit<SessionCommand, 'stdin'> {
  onLine: (line: string) => void;
}

export interface SessionBinding {
  session: SandboxSession;
  workspace: WorkspaceSettings;
  network: SandboxNetwork;
  timeoutSeconds: number;
  maxOutputChars: number;
  /** Kubernetes backend only: the Profile's Pod settings (image, namespace, resources, runtimeClassName). */
  pod?: SandboxPodSettings;
}

/** Binds a backend to one session's settings. */
export function bindSession(sandbox: Sandbox, b: SessionBinding): SessionSandbox {
  const request = (cmd: SessionCommand, signal: AbortSignal, maxSeconds: number): ExecRequest => ({
      session: b.session,
      workspace: b.workspace,
      network: b.network,
      command: cmd.command,
      ...(cmd.cwd !== undefined ? { cwd: cmd.cwd } : {}),
      ...(cmd.env ? { env: cmd.env } : {}),
      ...(cmd.stdin !== undefined ? { stdin: cmd.stdin } : {}),
      timeoutMs: Math.min(cmd.timeoutMs ?? b.timeoutSeconds * 1_000, maxSeconds * 1_000),
      maxOutputChars: cmd.maxOutputChars ?? b.maxOutputChars,
      signal,
      ...(b.pod ? { pod: b.pod } : {}),
  });
  const open = sandbox.open?.bind(sandbox);
  return {
    backend: sandbox.backend,
    timeoutSeconds: b.timeoutSeconds,
    run: (cmd, signal) => sandbox.exec(request(cmd, signal, MAX_TIMEOUT_SECONDS)),
    start: (cmd, signal) => sandbox.start(request(cmd, signal, MAX_BACKGROUND_SECONDS)),
    ...(open ? { open: (cmd: SessionChannelCommand, signal: AbortSignal) => open({ ...request(cmd, signal, MAX_TIMEOUT_SECONDS), onLine: cmd.onLine }) } : {}),
  };
}
