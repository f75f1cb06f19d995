// The controller's Prometheus metrics: results, errors and retries counted per controller under
// controller-runtime's names, queue depth read at scrape time.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../services/core/index.js';
import { Controller } from '../../../operator/runtime/controller.js';
import { createOperatorMetrics } from '../../../operator/runtime/metrics.js';

const value = async (m: ReturnType<typeof createOperatorMetrics>, name: string, labels: Record<string, string>) => {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (metric?.values as { labels: Record<string, string>; value: number }[] | undefined)
    ?.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
};

describe('controller metrics', () => {
  it('counts success, error (with a retry) and requeue_after per controller', async () => {
    const metrics = createOperatorMetrics();
    const seen: string[] = [];
    const c = new Controller('agent', async (key) => {
      seen.push(key);
      if (key === 'ns/flaky' && seen.filter((k) => k === key).length === 1) throw new Error('apiserver said no');
      return key === 'ns/cron' ? { requeueAfterMs: 60_000 } : undefined;
    }, createLogger('test', 'silent'), { baseMs: 5 }, metrics);
    c.start(1);
    for (const k of ['ns/ok', 'ns/flaky', 'ns/cron']) c.enqueue(k);
    for (let i = 0; i < 200 && seen.length < 4; i++) await new Promise((r) => setTimeout(r, 5));
    await c.stop();
    expect(seen).toEqual(['ns/ok', 'ns/flaky', 'ns/cron', 'ns/flaky']);
    expect(await value(metrics, 'controller_runtime_reconcile_total', { controller: 'agent', result: 'success' })).toBe(2);
    expect(await value(metrics, 'controller_runtime_reconcile_total', { controller: 'agent', result: 'error' })).toBe(1);
    expect(await value(metrics, 'controller_runtime_reconcile_total', { controller: 'agent', result: 'requeue_after' })).toBe(1);
    expect(await value(metrics, 'controller_runtime_reconcile_errors_total', { controller: 'agent' })).toBe(1);
    expect(await value(metrics, 'workqueue_retries_total', { name: 'agent' })).toBe(1);
    expect(await value(metrics, 'workqueue_adds_total', { name: 'agent' })).toBe(3);
    expect(await value(metrics, 'workqueue_depth', { name: 'agent' })).toBe(0);
  });
});
