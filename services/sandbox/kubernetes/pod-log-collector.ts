// Collects a running container's whole log, however the stream behaves: it follows the log and,
// when a read ends early (a cut connection, the kubelet closing a follow), reads again from the
// byte it stopped at, until the container has terminated and a read reached the end cleanly.
// Once the container terminated, a follow still open is dropped for a plain read of the rest
// (a follow may only notice the end on the kubelet's next look at the file).
import type { KubeConfig } from '@kubernetes/client-node';
import { readLog, type LogTarget } from './pod-log.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class LogCollector {
  private received = 0;
  private terminated = false;
  private stopped = false;
  private current?: AbortController;
  private wake?: () => void;
  private loop?: Promise<void>;

  constructor(private readonly kc: KubeConfig, private readonly target: LogTarget, private readonly onText: (text: string) => void) {}

  start(): void {
    this.loop ??= this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const final = this.terminated;
      const read = new AbortController();
      this.current = read;
      try {
        const r = await readLog(this.kc, this.target, {
          follow: !final, skipBytes: this.received, signal: read.signal, onText: this.onText,
        });
        this.received += r.bytes;
        // Complete only when a read that began after termination reached a clean end.
        if (r.end === 'eof' && final) return;
      } catch {
        // Not readable yet (container starting) or any more (Pod gone): try again until told to stop.
      }
      // Retry a little later, or at once when the container terminates.
      if (!this.terminated && !this.stopped) await new Promise<void>((resolve) => { this.wake = resolve; setTimeout(resolve, 150); });
    }
  }

  /** The container terminated: read what is left, for at most `maxWaitMs`. */
  async finish(maxWaitMs: number): Promise<void> {
    this.terminated = true;
    this.current?.abort(); // the bytes it delivered are counted; the plain read continues from there
    this.wake?.();
    this.start();
    await Promise.race([this.loop, pause(maxWaitMs)]);
    this.halt();
    await this.loop;
  }

  /** The container was killed: keep what arrives within `drainMs`, then stop. */
  async stop(drainMs: number): Promise<void> {
    if (!this.loop) return;
    await Promise.race([this.loop, pause(drainMs)]);
    this.halt();
    await this.loop;
  }

  private halt(): void {
    this.stopped = true;
    this.current?.abort();
    this.wake?.();
  }
}
