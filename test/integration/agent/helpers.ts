// A clock whose sleeps return at once and are recorded, so retry tests never wait for real
// delays and can assert the exact waits the policy chose.
import type { Clock } from '../../../services/agent/index.js';

export interface RecordingClock extends Clock {
  sleeps: number[];
  advance(ms: number): void;
}

export function recordingClock(start = Date.parse('2026-12-02T12:00:00Z')): RecordingClock {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    random: () => 0,
    advance: (ms) => { now += ms; },
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw signal.reason as Error;
      sleeps.push(ms);
      now += ms;
    },
  };
}
