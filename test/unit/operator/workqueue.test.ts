import { describe, expect, it } from 'vitest';
import { WorkQueue, type Scheduler } from '../../../operator/runtime/workqueue.js';
import { setCondition, unknownConditions } from '../../../operator/runtime/conditions.js';

/** A manual clock: scheduled callbacks run only when the test advances time. */
function manualScheduler() {
  let now = 0;
  const timers: { at: number; fn: () => void; cancelled: boolean }[] = [];
  const scheduler: Scheduler = (fn, ms) => {
    const t = { at: now + ms, fn, cancelled: false };
    timers.push(t);
    return () => { t.cancelled = true; };
  };
  const advance = (ms: number) => {
    now += ms;
    for (const t of timers.filter((x) => !x.cancelled && x.at <= now)) { t.cancelled = true; t.fn(); }
  };
  return { scheduler, advance };
}

describe('WorkQueue', () => {
  it('de-duplicates keys waiting in the queue', async () => {
    const q = new WorkQueue();
    q.add('a'); q.add('b'); q.add('a');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands out a key being processed; re-queues it once when added meanwhile', async () => {
    const q = new WorkQueue();
    q.add('a');
    const k = await q.get();
    q.add('a'); q.add('a');
    expect(q.length).toBe(0); // not handed to a second worker
    q.done(k!);
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('a');
    q.done('a');
    expect(q.length).toBe(0);
  });

  it('wakes a waiting worker on add, and ends waiting workers on shutdown', async () => {
    const q = new WorkQueue();
    const waiting = q.get();
    q.add('x');
    expect(await waiting).toBe('x');
    const idle = q.get();
    q.shutDown();
    expect(await idle).toBeUndefined();
  });

  it('backs off per item exponentially, capped, and forget resets', async () => {
    const clock = manualScheduler();
    const q = new WorkQueue({ baseMs: 100, maxMs: 1_000, scheduler: clock.scheduler });
    expect([q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a'), q.addRateLimited('a')]).toEqual([100, 200, 400, 800, 1_000]);
    expect(q.addRateLimited('b')).toBe(100); // per item
    expect(q.length).toBe(0);
    clock.advance(99);
    expect(q.length).toBe(0);
    clock.advance(1);
    expect(q.length).toBe(2); // the first delay of each key (later ones for a pending key are merged)
    q.forget('a');
    expect(q.failures('a')).toBe(0);
    expect(q.addRateLimited('a')).toBe(100);
  });
});

describe('conditions', () => {
  it('keeps lastTransitionTime while status is unchanged and moves it on a change', () => {
    let t = 0;
    const now = () => new Date(Date.UTC(2026, 0, 1, 0, 0, t));
    let list = unknownConditions(['Ready'], 1, now);
    expect(list[0]).toMatchObject({ type: 'Ready', status: 'Unknown', lastTransitionTime: '2026-01-01T00:00:00Z' });
    t = 5;
    list = setCondition(list, { type: 'Ready', status: 'True', reason: 'Published', message: 'ok' }, now);
    expect(list[0]!.lastTransitionTime).toBe('2026-01-01T00:00:05Z');
    t = 9;
    list = setCondition(list, { type: 'Ready', status: 'True', reason: 'Published', message: 'still ok' }, now);
    expect(list[0]!.lastTransitionTime).toBe('2026-01-01T00:00:05Z');
    expect(list).toHaveLength(1);
  });
});
