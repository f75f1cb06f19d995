// A channel process in a per-call Pod (KubernetesSandbox.open): the Pod's container only waits
// (holderCommand); once it runs, the process is started in it by `pods/exec` (exec-channel.ts)
// with the Pod's environment and working directory. The call's outcome is the process's exit
// code; the Pod is then deleted. A timeout, abort or lost Pod ends the process with the Pod.
import type { KubeConfig } from '@kubernetes/client-node';
import type { CappedOutput } from '../output.js';
import type { ChannelRequest } from '../types.js';
import { exitCodeOf, openRefusedAgain } from '../agent-sandbox/pod-exec.js';
import { bounded } from './failures.js';
import { lineTooLong, openExecChannel, openFailure, type ExecChannel } from './exec-channel.js';
import { INTERRUPTED_EXIT_CODE, TIMEOUT_EXIT_CODE, type PodOutcome, type PodRun } from './pod-run.js';
import { CONTAINER_NAME, deadlineSeconds } from './pod-spec.js';

/** The waiting container's command: sleep through the Pod's whole deadline (it is deleted before). */
export const holderCommand = (timeoutMs: number, startTimeoutMs: number): string =>
  `exec sleep ${deadlineSeconds(timeoutMs, startTimeoutMs)}`;

export interface Attach {
  /** The open channel, once the process runs. */
  channel?: ExecChannel;
  run(pod: PodRun, at: { namespace: string; pod: string; signal: AbortSignal; stop: () => void; onOpen: () => void }): Promise<PodOutcome>;
}

export function channelInPod(o: { kc: KubeConfig; req: ChannelRequest; apiTimeoutMs: number; output: CappedOutput }): Attach {
  const attach: Attach = {
    async run(pod, at) {
      if (!(await pod.running)) return pod.done;
      const runningAt = Date.now();
      const where = `sandbox Pod ${at.namespace}/${at.pod}`;
      let tooLong = false;
      let channel: ExecChannel;
      try {
        channel = await openExecChannel({
          kc: o.kc, namespace: at.namespace, pod: at.pod, container: CONTAINER_NAME, argv: ['/bin/sh', '-c', o.req.command],
          apiTimeoutMs: o.apiTimeoutMs, onLine: o.req.onLine, onOutput: (t) => o.output.push(t),
          onTooLong: () => { tooLong = true; at.stop(); },
          opening: (open) => openRefusedAgain(open, { deadline: Date.now() + o.req.timeoutMs, signal: at.signal }),
        });
      } catch (err) {
        at.stop();
        const ended = await pod.done;
        return at.signal.aborted || ended.status === 'timeout' ? ended : openFailure(err, where);
      }
      attach.channel = channel;
      at.onOpen();
      // The process ends (its stream closes), or the Pod does (timeout, abort, lost): then the stream closes too.
      const first = await Promise.race([channel.closed.then((status) => ({ status })), pod.done.then((outcome) => ({ outcome }))]);
      if ('outcome' in first) {
        channel.close();
        return first.outcome;
      }
      at.stop();
      const code = first.status ? exitCodeOf(first.status) : undefined;
      if (tooLong) { await pod.done; return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: lineTooLong }; }
      // Killed as its Pod passed the timeout (PodRun deletes it then; the stream may report the kill first).
      if (code === TIMEOUT_EXIT_CODE && Date.now() - runningAt >= o.req.timeoutMs - 250) {
        await pod.done;
        return { status: 'timeout', exitCode: TIMEOUT_EXIT_CODE, reason: `The process ran past its ${Math.round(o.req.timeoutMs / 1000)}s timeout; the sandbox Pod was deleted.` };
      }
      if (code !== undefined && !at.signal.aborted) { await pod.done; return { status: 'ok', exitCode: code }; }
      // Closed without a status: the Pod's end says why (deleted at the timeout, stopped, lost).
      const ended = await bounded(pod.done, o.apiTimeoutMs, 'ending the sandbox Pod').catch(() => undefined);
      if (ended && ended.status !== 'ok') return ended;
      return { status: 'degraded', exitCode: -1, reason: `The exec stream to ${where} closed without an exit status. The process may have run; check before running it again.` };
    },
  };
  return attach;
}
