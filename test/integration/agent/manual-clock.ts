// A clock whose sleeps resolve only when the test moves time past them: deadlines (the 420 s
// tool batch deadline) elapse in fake time, exactly when the test says so.
import type { Clock } from '../../../services/agent/index.js';

export interface ManualClock {
  clock: Clock;
  /** Moves time on and resolves the sleeps that are due. */
  advance(ms: number): void;
  /** Sleeps neither due nor aborted. */
  pending(): number;
}

export function manualClock(): ManualClock {
  let now = 0;
  const sleeps: { due: number; resolve: () => void }[] = [];
  const clock: Clock = {
    now: () => now,
    random: () => 0,
    sleep: (ms, signal) => new Promise<void>((resolve, reject) => {
      const entry = { due: now + ms, resolve };
      sleeps.push(entry);
      signal?.addEventListener('abort', () => { sleeps.splice(sleeps.indexOf(entry), 1); reject(new Error('aborted')); }, { once: true });
    }),
  };
  const advance = (ms: number) => {
    now += ms;
    for (const s of sleeps.filter((x) => x.due <= now)) {
      sleeps.splice(sleeps.indexOf(s), 1);
      s.resolve();
    }
  };
  return { clock, advance, pending: () => sleeps.length };
}
