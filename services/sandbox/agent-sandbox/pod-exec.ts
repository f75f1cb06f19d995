// One command in a session sandbox's Pod, through `pods/exec` (a WebSocket to the apiserver):
// output streamed as it comes, the exit code from the exec's status channel. A wrapper shell in
// the Pod gives what exec alone does not:
// - the working directory a command ends in is remembered for the next command without a
//   `cwd`, in SESSION_CWD_FILE on the workspace volume (see there for why);
// - the command runs under coreutils `timeout -s KILL` in its own process group, so it dies at
//   its deadline even when the worker is gone (closing an exec stream kills nothing in the Pod);
// - its process group id is written to /tmp/.hermes/<call>.pid, so an interrupt (or our own
//   timer) kills the whole tree with a second exec.
// The command text reaches the Pod as an argv word, never spliced into the wrapper. An exec the
// kubelet refuses before it starts (a container still starting) is tried again a few times.
import { PassThrough, Writable } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import { WORKSPACE_PATH } from '../types.js';
import { apiFailure, bounded, upgradeRefusal } from '../kubernetes/failures.js';
import { INTERRUPTED_EXIT_CODE, TIMEOUT_EXIT_CODE, type PodOutcome } from '../kubernetes/pod-run.js';
import { SESSION_CONTAINER } from './resources.js';
import { pause } from '../../core/index.js';

/** Where the wrapper keeps what only this Pod needs (the calls' process groups): the writable /tmp. */
export const STATE_DIR = '/tmp/.hermes';

/**
 * The folder, relative to the workspace, that keeps the session's working directory (file `cwd`).
 * On the workspace volume, not in the Pod's /tmp: a suspend deletes the Pod and a resume starts a
 * new one on the same volume, so the directory survives exactly as long as the files it names do
 * (until the workspace TTL deletes both), every worker reads it where the command runs, and no
 * extra API call or database row is needed per command. Postgres or an annotation on the claim
 * would need the final directory carried out of the exec stream (no side channel but stdout and
 * stderr) or a second exec per command. `.hermes` is the workspace's reserved folder (checkpoints
 * live there too): file tools refuse it and search_files skips it.
 */
export const SESSION_CWD_DIR = '.hermes/session';

/**
 * The wrapper shell. `$1` call id, `$2` working directory ('' = the remembered one, else the
 * workspace), `$3` timeout in seconds, `$4` the command. Exit 125: the wrapper itself could not
 * run. `stateDir` and `workspace` are parameters for the wrapper's own tests only.
 */
export function wrapper(stateDir = STATE_DIR, workspace = WORKSPACE_PATH): string {
  const k = `${workspace}/${SESSION_CWD_DIR}`;
  return [
    `s=${stateDir}; mkdir -p "$s" || exit 125`,
    'if [ -n "$2" ]; then cd -- "$2" || exit 1; r=0',
    `else d=$(cat ${k}/cwd 2>/dev/null); cd -- "\${d:-${workspace}}" 2>/dev/null || cd ${workspace} || exit 1; r=1; fi`,
    // Written aside, then renamed: a concurrent command never reads half a path. A workspace that
    // cannot take it (full, made read-only) only loses the directory, not the command.
    `run='[ "$2" = 1 ] && trap "{ mkdir -p ${k} && pwd > ${k}/cwd.$$ && mv -f ${k}/cwd.$$ ${k}/cwd; } 2>/dev/null" EXIT; eval "$1"'`,
    // An async list's stdin is /dev/null unless redirected: keep the exec's stdin on fd 3 for it.
    'exec 3<&0',
    'if command -v timeout >/dev/null 2>&1; then timeout -s KILL "$3" /bin/sh -c "$run" sh "$4" "$r" <&3 3<&- &',
    'else /bin/sh -c "$run" sh "$4" "$r" <&3 3<&- & fi',
    'exec 3<&-',
    'p=$!; echo "$p" > "$s/$1.pid"; wait "$p"; c=$?; rm -f "$s/$1.pid"; exit "$c"',
  ].join('\n');
}

/** Kills the process group (or, without one, the process) of call `$1`. */
export const killer = (stateDir = STATE_DIR): string =>
  `p=$(cat ${stateDir}/"$1".pid 2>/dev/null) || exit 0; kill -s KILL -- "-$p" 2>/dev/null || kill -s KILL "$p" 2>/dev/null; exit 0`;

/** The argv of the exec: `env` with the request's variables, then the wrapper. */
export function execArgv(o: { callId: string; command: string; cwd?: string; env?: Record<string, string>; timeoutSeconds: number }): string[] {
  const env = Object.entries(o.env ?? {}).map(([k, v]) => `${k}=${v}`);
  return ['env', ...env, '/bin/sh', '-c', wrapper(), 'hermes', o.callId, o.cwd ?? '', String(o.timeoutSeconds), o.command];
}

/** The exit code in an exec's final status: 0 on Success, the ExitCode cause otherwise. */
export function exitCodeOf(status: V1Status): number | undefined {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = cause?.message !== undefined ? Number(cause.message) : NaN;
  return Number.isInteger(code) ? code : undefined;
}

export interface PodExecOptions {
  kc: KubeConfig;
  namespace: string;
  pod: string;
  callId: string;
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  timeoutMs: number;
  apiTimeoutMs: number;
  signal: AbortSignal;
  onOutput: (text: string) => void;
  /** The command was handed to the Pod (the exec's stream is open). */
  onRunning?: () => void;
}

const textSink = (onText: (s: string) => void): Writable => {
  const decoder = new TextDecoder('utf-8');
  return new Writable({
    write(chunk: Buffer, _enc, done) { onText(decoder.decode(chunk, { stream: true })); done(); },
    final(done) { const rest = decoder.decode(); if (rest) onText(rest); done(); },
  });
};

/** Kills call `callId`'s processes in the Pod; failures are swallowed (the `timeout` wrapper still ends it). */
export async function killInPod(kc: KubeConfig, namespace: string, pod: string, callId: string, apiTimeoutMs: number): Promise<void> {
  const exec = new Exec(kc);
  await bounded(new Promise<void>((resolve, reject) => {
    exec.exec(namespace, pod, SESSION_CONTAINER, ['/bin/sh', '-c', killer(), 'hermes', callId], null, null, null, false, () => resolve())
      .then((ws) => ws.on('close', () => resolve()), reject);
  }), apiTimeoutMs, 'killing the command in the session sandbox').catch(() => undefined);
}

/**
 * Pauses before each further try at an exec refused before it started. A kubelet answers 409
 * while the container is still starting (the test kubelet for a few ms after it writes Running,
 * which makes the Sandbox Ready; a real one too, briefly), and a proxy on the way may answer 429
 * or 5xx: none of those ran anything.
 */
export const EXEC_REFUSED_DELAYS_MS: readonly number[] = [10, 20, 40, 80, 160, 320];

const refusedForNow = (code: number | undefined): boolean => code === 409 || code === 429 || (code !== undefined && code >= 500);

/**
 * `open()`, tried again after EXEC_REFUSED_DELAYS_MS while the server refuses the WebSocket
 * upgrade with a status that may pass (upgradeRefusal): then the command was never handed over.
 * Any other failure — a timeout, a connection lost during the handshake — may have reached the
 * kubelet, so it is thrown at once: a command is never run twice. Stops at `deadline` or abort.
 */
export async function openRefusedAgain<T>(open: () => Promise<T>, o: { deadline: number; signal: AbortSignal; delaysMs?: readonly number[] }): Promise<T> {
  const delays = o.delaysMs ?? EXEC_REFUSED_DELAYS_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      return await open();
    } catch (err) {
      const delay = delays[attempt];
      if (delay === undefined || !refusedForNow(upgradeRefusal(err)) || o.signal.aborted || Date.now() + delay >= o.deadline) throw err;
      await pause(delay, o.signal);
      if (o.signal.aborted) throw err;
    }
  }
}

/** Runs one command in the Pod; every failure of the cluster is a `degraded` outcome. */
export async function podExec(o: PodExecOptions): Promise<PodOutcome> {
  const timeoutSeconds = Math.max(1, Math.ceil(o.timeoutMs / 1_000));
  const argv = execArgv({ callId: o.callId, command: o.command, ...(o.cwd !== undefined ? { cwd: o.cwd } : {}), ...(o.env ? { env: o.env } : {}), timeoutSeconds });
  const stdin = new PassThrough();
  stdin.end(o.stdin ?? '');
  let status: V1Status | undefined;
  let ended = false;
  let stopReason: 'interrupted' | 'timeout' | undefined;
  const exec = new Exec(o.kc);
  const t0 = Date.now();
  let socket: Awaited<ReturnType<Exec['exec']>>;
  try {
    const open = () => bounded(exec.exec(o.namespace, o.pod, SESSION_CONTAINER, argv, textSink(o.onOutput), textSink(o.onOutput), stdin, false,
      (s) => { status = s; }), o.apiTimeoutMs, 'opening pods/exec in the session sandbox');
    socket = await openRefusedAgain(open, { deadline: t0 + o.timeoutMs, signal: o.signal });
  } catch (err) {
    if (o.signal.aborted) return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: 'Stopped before the command started in the session sandbox.' };
    return { status: 'degraded', exitCode: -1, reason: apiFailure(err, `starting the command in session sandbox ${o.namespace}/${o.pod}`).reason };
  }
  o.onRunning?.();
  const closed = new Promise<void>((resolve) => {
    if (socket.readyState === 3) resolve(); // CLOSED
    socket.on('close', () => resolve());
    socket.on('error', () => resolve());
  });
  const stop = (why: 'interrupted' | 'timeout'): void => {
    if (ended || stopReason) return;
    stopReason = why;
    void killInPod(o.kc, o.namespace, o.pod, o.callId, o.apiTimeoutMs).finally(() => setTimeout(() => socket.close(), 2_000).unref());
  };
  const onAbort = (): void => stop('interrupted');
  if (o.signal.aborted) onAbort();
  else o.signal.addEventListener('abort', onAbort, { once: true });
  // The Pod's own `timeout` kills at timeoutSeconds; ours is the backstop a second later.
  const timer = setTimeout(() => stop('timeout'), timeoutSeconds * 1_000 + 1_000);
  try {
    await closed;
  } finally {
    ended = true;
    clearTimeout(timer);
    o.signal.removeEventListener('abort', onAbort);
  }
  return outcomeOf({ status, stopReason, elapsedMs: Date.now() - t0, timeoutSeconds, where: `${o.namespace}/${o.pod}` });
}

/** The call's outcome from what the exec stream ended with. */
export function outcomeOf(e: { status: V1Status | undefined; stopReason: 'interrupted' | 'timeout' | undefined; elapsedMs: number; timeoutSeconds: number; where: string }): PodOutcome {
  const code = e.status ? exitCodeOf(e.status) : undefined;
  if (e.stopReason === 'interrupted') return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: 'Stopped: the command was killed in the session sandbox.' };
  // 137 is SIGKILL: the Pod's `timeout` when the call lasted that long, otherwise the command's own doing.
  if (e.stopReason === 'timeout' || (code === TIMEOUT_EXIT_CODE && e.elapsedMs >= e.timeoutSeconds * 1_000 - 250)) {
    return { status: 'timeout', exitCode: TIMEOUT_EXIT_CODE, reason: `The command ran past its ${e.timeoutSeconds}s timeout and was killed.` };
  }
  if (code === undefined) {
    return { status: 'degraded', exitCode: -1, reason: `The exec stream to session sandbox ${e.where} closed without an exit status (${e.status?.message ?? 'the connection was lost'}). The command may have run; check before running it again.` };
  }
  if (code === 125) return { status: 'degraded', exitCode: -1, reason: `The session sandbox ${e.where} could not prepare the command (its /tmp is not writable). The command did not run.` };
  return { status: 'ok', exitCode: code };
}
