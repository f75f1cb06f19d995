// A channel process (types.ts ChannelRequest) in a running Pod, through `pods/exec`: the
// WebSocket's stdin stream stays open for the worker's lines, its stdout stream is split into
// lines, its stderr stream is the process's output; the exit code comes from the status channel.
// Used by the per-call backend (a Pod that only waits, then this exec) and by mode session (the
// session's Pod). Closing the stream kills nothing in the Pod: the caller ends the process by
// deleting the Pod, or by killing it in the Pod.
import { PassThrough, Writable } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import { channelLine, LineSplitter, lineTooLong } from '../channel-lines.js';
import { apiFailure, bounded } from './failures.js';
import type { PodOutcome } from './pod-run.js';

export interface ExecChannelOptions {
  kc: KubeConfig;
  namespace: string;
  pod: string;
  container: string;
  argv: string[];
  apiTimeoutMs: number;
  /** Opens the exec (e.g. with openRefusedAgain around it); @defaultValue one try */
  opening?: <T>(open: () => Promise<T>) => Promise<T>;
  onLine: (line: string) => void;
  onOutput: (text: string) => void;
  /** A line over the limit arrived: the caller should end the process. */
  onTooLong: () => void;
}

export interface ExecChannel {
  send(line: string): void;
  end(): void;
  /** Settles when the stream closes: the exit status, or undefined when it closed without one. */
  readonly closed: Promise<V1Status | undefined>;
  close(): void;
}

const sink = (onData: (chunk: Buffer) => void): Writable => new Writable({
  write(chunk: Buffer, _enc, done) { onData(chunk); done(); },
});

/** Opens the exec; a failure to open is thrown (nothing ran). */
export async function openExecChannel(o: ExecChannelOptions): Promise<ExecChannel> {
  const stdin = new PassThrough();
  const lines = new LineSplitter(o.onLine, o.onTooLong);
  const decoder = new TextDecoder('utf-8');
  let status: V1Status | undefined;
  const exec = new Exec(o.kc);
  const open = () => bounded(exec.exec(o.namespace, o.pod, o.container, o.argv,
    sink((c) => lines.push(c)), sink((c) => o.onOutput(decoder.decode(c, { stream: true }))), stdin, false,
    (s) => { status = s; }), o.apiTimeoutMs, `opening pods/exec in ${o.namespace}/${o.pod}`);
  const socket = await (o.opening ? o.opening(open) : open());
  const closed = new Promise<V1Status | undefined>((resolve) => {
    if (socket.readyState === 3) resolve(status);
    socket.on('close', () => resolve(status));
    socket.on('error', () => resolve(status));
  });
  return {
    send: (line) => { if (!stdin.writableEnded) stdin.write(channelLine(line)); },
    end: () => { stdin.end(); },
    closed,
    close: () => { stdin.end(); socket.close(); },
  };
}

export { lineTooLong };

/** The degraded outcome of an exec that could not be opened. */
export const openFailure = (err: unknown, where: string): PodOutcome =>
  ({ status: 'degraded', exitCode: -1, reason: apiFailure(err, `starting the process in ${where}`).reason });
