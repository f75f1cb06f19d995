// Credential pools and primary cool-downs: process-wide state shared by every turn of a worker,
// so a key that was rate-limited or refused is not the first one the next turn tries.
import type { ChatProvider } from './messages.js';

/** The keys of one provider endpoint, each as a ready client, with a rotating cursor. */
export class CredentialPool {
  private cursor = 0;
  constructor(readonly id: string, private readonly providers: ChatProvider[]) {
    if (!providers.length) throw new Error(`credential pool ${id} is empty`);
  }
  get size(): number {
    return this.providers.length;
  }
  current(): ChatProvider {
    return this.providers[this.cursor % this.providers.length]!;
  }
  /** Moves to the next key; false when there is no other key. */
  rotate(): boolean {
    if (this.providers.length < 2) return false;
    this.cursor = (this.cursor + 1) % this.providers.length;
    return true;
  }
}

/** Primary model cool-down after it failed over: 60 s, doubling per consecutive failure, at most 4 h. */
export class CooldownBook {
  static readonly MIN_MS = 60_000;
  static readonly MAX_MS = 4 * 3_600_000;
  private readonly entries = new Map<string, { until: number; failures: number }>();

  isCooling(key: string, now: number): boolean {
    return (this.entries.get(key)?.until ?? 0) > now;
  }
  /** Records a failure; returns the cool-down it started (ms). */
  fail(key: string, now: number): number {
    const failures = (this.entries.get(key)?.failures ?? 0) + 1;
    const ms = Math.min(CooldownBook.MIN_MS * 2 ** (failures - 1), CooldownBook.MAX_MS);
    this.entries.set(key, { until: now + ms, failures });
    return ms;
  }
  succeed(key: string): void {
    this.entries.delete(key);
  }
}
