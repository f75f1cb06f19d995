// Collects a running container's whole log, however the stream behaves: it follows the log and,
// when a read ends early (a cut connection, the kubelet closing a follow), reads again from the
// byte it stopped at, until the container has terminated and a read reached the end cleanly.
import type { KubeConfig } from '@kubernetes/client-node';
import { readLog, type LogTarget } from './pod-log.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class LogCollector {
  private received = 0;
  private terminated = false;
  private readonly abort = new AbortController();
  private loop?: Promise<void>;

  constructor(private readonly kc: KubeConfig, private readonly target: LogTarget, private readonly onText: (text: string) => void) {}

  start(): void {
    this.loop ??= this.run();
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      const terminatedBefore = this.terminated;
      try {
        const read = await readLog(this.kc, this.target, {
          follow: !terminatedBefore, skipBytes: this.received, signal: this.abort.signal,
          onText: this.onText,
        });
        this.received += read.bytes;
        // Complete only when a read that began after termination reached a clean end.
        if (read.end === 'eof' && terminatedBefore) return;
        if (read.end === 'aborted') return;
      } catch {
        // Not readable yet (container starting) or any more (Pod gone): try again until told to stop.
      }
      await pause(this.terminated ? 20 : 150);
    }
  }

  /** The container terminated: read what is left, for at most `maxWaitMs`. */
  async finish(maxWaitMs: number): Promise<void> {
    this.terminated = true;
    this.start();
    await Promise.race([this.loop, pause(maxWaitMs)]);
    this.abort.abort();
    await this.loop;
  }

  /** The container was killed: keep what arrives within `drainMs`, then stop. */
  async stop(drainMs: number): Promise<void> {
    if (!this.loop) return;
    await Promise.race([this.loop, pause(drainMs)]);
    this.abort.abort();
    await this.loop;
  }
}
