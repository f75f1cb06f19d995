// Credential pools and primary cool-downs: process-wide state shared by every turn of a worker,
// so a key that was rate-limited or refused is not the first one the next turn tries.
import type { ChatProvider } from './messages.js';

/**
 * Re-resolves key `index`'s secret reference: a new client when the value changed (a rotated
 * Secret), undefined when it did not (or no longer resolves).
 */
export type KeyRefresher = (index: number) => Promise<ChatProvider | undefined>;

/** The keys of one provider endpoint, each as a ready client, with a rotating cursor. */
export class CredentialPool {
  private cursor = 0;
  private readonly providers: ChatProvider[];
  constructor(readonly id: string, providers: ChatProvider[], private readonly refresher?: KeyRefresher) {
    if (!providers.length) throw new Error(`credential pool ${id} is empty`);
    this.providers = [...providers];
  }
  /** Which key is current (refresh bookkeeping). */
  get index(): number {
    return this.cursor % this.providers.length;
  }
  /**
   * Auth refused the current key: re-resolve its secret. True when the value changed and the
   * current key now uses it (retry once with it before rotating).
   */
  async refresh(): Promise<boolean> {
    if (!this.refresher) return false;
    const i = this.index;
    const fresh = await this.refresher(i).catch(() => undefined);
    if (!fresh) return false;
    this.providers[i] = fresh;
    return true;
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
