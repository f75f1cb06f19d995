// A cap on what one API key keeps waiting at once on this process (chat completions and event
// streams): each holds a socket, a subscription and a share of the status poll. Past
// HERMES_MAX_WAITS_PER_KEY a new wait is refused with 429 before anything is admitted.
import { HermesError } from '../core/index.js';

export class WaitLimiter {
  private readonly open = new Map<string, number>();

  constructor(private readonly maxPerKey: number) {}

  /** Takes one wait slot of `keyId`; call the returned function exactly once when the wait ends. */
  acquire(keyId: string): () => void {
    const n = this.open.get(keyId) ?? 0;
    if (n >= this.maxPerKey) {
      throw new HermesError('HERMES_TOO_MANY_WAITS', `This key already has ${n} open (HERMES_MAX_WAITS_PER_KEY=${this.maxPerKey}); wait for one to finish, or poll GET …/admissions/:id instead.`);
    }
    this.open.set(keyId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(keyId) ?? 1) - 1;
      if (left > 0) this.open.set(keyId, left);
      else this.open.delete(keyId);
    };
  }

  /** Open waits of `keyId` (for tests). */
  count(keyId: string): number {
    return this.open.get(keyId) ?? 0;
  }
}
