// The operator's Prometheus metrics, under the names controller-runtime uses so the dashboards
// and alerts platform teams already run for Go operators work unchanged: reconcile counts by
// result, errors, reconcile time, work-queue depth/adds/retries, and leader status.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface OperatorMetrics {
  registry: Registry;
  reconcileTotal: Counter<'controller' | 'result'>;
  reconcileErrors: Counter<'controller'>;
  reconcileTime: Histogram<'controller'>;
  queueAdds: Counter<'name'>;
  queueRetries: Counter<'name'>;
  /** Set by `collect` from the live queues (see {@link OperatorMetrics.watchQueue}). */
  queueDepth: Gauge<'name'>;
  leader: Gauge<'name'>;
  /** Mode session: the sessions' agent-sandbox sandboxes by state (active, suspended, starting), set by the idle sweep. */
  sessionSandboxes: Gauge<'state'>;
  /** Reports `depth()` as `workqueue_depth{name}` at every scrape. */
  watchQueue(name: string, depth: () => number): void;
}

export function createOperatorMetrics(): OperatorMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ component: 'operator' });
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const depths = new Map<string, () => number>();
  const queueDepth: Gauge<'name'> = new Gauge({
    name: 'workqueue_depth', help: 'Current depth of the work queue.', labelNames: ['name'], registers,
    collect() { for (const [name, depth] of depths) queueDepth.set({ name }, depth()); },
  });
  return {
    registry,
    reconcileTotal: new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller (result: success | error | requeue_after).', labelNames: ['controller', 'result'], registers }),
    reconcileErrors: new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller.', labelNames: ['controller'], registers }),
    reconcileTime: new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help: 'Length of time per reconciliation per controller.', labelNames: ['controller'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers }),
    queueAdds: new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by the work queue.', labelNames: ['name'], registers }),
    queueRetries: new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries (backoff re-adds) handled by the work queue.', labelNames: ['name'], registers }),
    queueDepth,
    leader: new Gauge({ name: 'leader_election_master_status', help: '1 while this replica holds the leader Lease, else 0.', labelNames: ['name'], registers }),
    sessionSandboxes: new Gauge({ name: 'hermes_session_sandboxes', help: 'Mode session: sessions\' agent-sandbox sandboxes by state (active: Ready; suspended: idled out, workspace kept; starting: claimed, not Ready yet).', labelNames: ['state'], registers }),
    watchQueue: (name, depth) => { depths.set(name, depth); },
  };
}
