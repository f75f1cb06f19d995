// A channel process (types.ts ChannelRequest) in the session's sandbox Pod (mode session): the
// same wrapper as every command there (pod-exec.ts: working directory, `timeout -s KILL`, its
// process group recorded for a kill), started by `pods/exec` with the stream's stdin and stdout
// as the line channel (exec-channel.ts) and its stderr as the output.
import type { KubeConfig } from '@kubernetes/client-node';
import type { CappedOutput } from '../output.js';
import type { ChannelRequest } from '../types.js';
import { lineTooLong, openExecChannel, openFailure, type ExecChannel } from '../kubernetes/exec-channel.js';
import { INTERRUPTED_EXIT_CODE, type PodOutcome } from '../kubernetes/pod-run.js';
import { execArgv, killInPod, openRefusedAgain, outcomeOf } from './pod-exec.js';
import { SESSION_CONTAINER } from './resources.js';

export interface SessionChannelOptions {
  kc: KubeConfig;
  namespace: string;
  pod: string;
  callId: string;
  req: ChannelRequest;
  apiTimeoutMs: number;
  signal: AbortSignal;
  output: CappedOutput;
  onRunning: () => void;
  /** Where the open channel is handed to the caller. */
  holder: { channel?: ExecChannel };
}

export async function sessionChannel(o: SessionChannelOptions): Promise<PodOutcome> {
  const { req } = o;
  const timeoutSeconds = Math.max(1, Math.ceil(req.timeoutMs / 1_000));
  const argv = execArgv({ callId: o.callId, command: req.command, ...(req.cwd !== undefined ? { cwd: req.cwd } : {}), ...(req.env ? { env: req.env } : {}), timeoutSeconds });
  const where = `session sandbox ${o.namespace}/${o.pod}`;
  const t0 = Date.now();
  let stopReason: 'interrupted' | 'timeout' | undefined;
  let tooLong = false;
  let channel: ExecChannel | undefined;
  const stop = (why: 'interrupted' | 'timeout'): void => {
    if (stopReason) return;
    stopReason = why;
    void killInPod(o.kc, o.namespace, o.pod, o.callId, o.apiTimeoutMs).finally(() => setTimeout(() => channel?.close(), 2_000).unref());
  };
  try {
    channel = await openExecChannel({
      kc: o.kc, namespace: o.namespace, pod: o.pod, container: SESSION_CONTAINER, argv, apiTimeoutMs: o.apiTimeoutMs,
      onLine: req.onLine, onOutput: (t) => o.output.push(t), onTooLong: () => { tooLong = true; stop('interrupted'); },
      opening: (open) => openRefusedAgain(open, { deadline: t0 + req.timeoutMs, signal: o.signal }),
    });
  } catch (err) {
    if (o.signal.aborted) return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: 'Stopped before the process started in the session sandbox.' };
    return openFailure(err, where);
  }
  o.holder.channel = channel;
  o.onRunning();
  const onAbort = (): void => stop('interrupted');
  if (o.signal.aborted) onAbort();
  else o.signal.addEventListener('abort', onAbort, { once: true });
  // The Pod's own `timeout` kills at timeoutSeconds; ours is the backstop a second later.
  const timer = setTimeout(() => stop('timeout'), timeoutSeconds * 1_000 + 1_000);
  let status;
  try {
    status = await channel.closed;
  } finally {
    clearTimeout(timer);
    o.signal.removeEventListener('abort', onAbort);
  }
  if (tooLong) return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: lineTooLong };
  return outcomeOf({ status, stopReason, elapsedMs: Date.now() - t0, timeoutSeconds, where });
}
