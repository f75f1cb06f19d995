// withDeadline: a caller's signal with a time limit added, held by its own timer (not
// AbortSignal.timeout() under AbortSignal.any(), whose sources Node 20 holds weakly).
import { describe, expect, it } from 'vitest';
import { withDeadline } from '../../services/core/index.js';

const aborted = (signal: AbortSignal) => new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));

describe('withDeadline', () => {
  it('aborts with a TimeoutError naming the limit when the time is up, the caller\'s signal untouched', async () => {
    const caller = new AbortController();
    const d = withDeadline(caller.signal, 5, 'the callback did not answer within 5 ms');
    const reason = (await aborted(d.signal)) as DOMException;
    expect(reason.name).toBe('TimeoutError');
    expect(reason.message).toBe('the callback did not answer within 5 ms');
    expect(caller.signal.aborted).toBe(false);
  });

  it('aborts with the caller\'s own reason when the caller aborts first', async () => {
    const caller = new AbortController();
    const d = withDeadline(caller.signal, 60_000);
    const reason = aborted(d.signal);
    caller.abort(new Error('stopped'));
    expect(((await reason) as Error).message).toBe('stopped');
    d.clear();
  });

  it('works without a caller signal, and clear() stops the timer', async () => {
    const fired = withDeadline(undefined, 1);
    expect(((await aborted(fired.signal)) as DOMException).name).toBe('TimeoutError');
    const cleared = withDeadline(undefined, 1);
    cleared.clear();
    // A later deadline fires; the cleared one has not.
    await aborted(withDeadline(undefined, 20).signal);
    expect(cleared.signal.aborted).toBe(false);
  });
});
