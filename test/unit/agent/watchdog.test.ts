// The liveness watchdog with injected time and ticker: no real timers, no wall clock.
import { describe, expect, it } from 'vitest';
import { ProgressWatchdog, type Ticker } from '../../../services/agent/index.js';

function manual() {
  let now = 0;
  const ticks = new Set<() => void>();
  const polls: number[] = [];
  const ticker: Ticker = (ms, fn) => { polls.push(ms); ticks.add(fn); return () => ticks.delete(fn); };
  return { ticker, polls, ticks, now: () => now, advance: (ms: number) => { now += ms; for (const t of [...ticks]) t(); } };
}

describe('ProgressWatchdog', () => {
  it('aborts after the stall window without progress, polling at the configured interval', () => {
    const t = manual();
    const dog = new ProgressWatchdog({ stallMs: 600_000, pollMs: 15_000, now: t.now, ticker: t.ticker });
    expect(t.polls).toEqual([15_000]);
    t.advance(599_999);
    expect(dog.signal.aborted).toBe(false);
    t.advance(1);
    expect(dog.signal.aborted).toBe(true);
    expect((dog.signal.reason as Error).message).toBe('no progress for 600 s');
    expect(t.ticks.size).toBe(0); // stopped polling
  });

  it('progress restarts the window; stop() ends polling', () => {
    const t = manual();
    const dog = new ProgressWatchdog({ stallMs: 1_000, pollMs: 100, now: t.now, ticker: t.ticker });
    for (let i = 0; i < 10; i++) { t.advance(900); dog.progress(); }
    expect(dog.signal.aborted).toBe(false);
    t.advance(1_000);
    expect(dog.signal.aborted).toBe(true);
    const other = new ProgressWatchdog({ stallMs: 1_000, pollMs: 100, now: t.now, ticker: t.ticker });
    other.stop();
    expect(t.ticks.size).toBe(0);
  });
});
