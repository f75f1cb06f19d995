// Prometheus metrics (prom-client). One registry per process, exposed on /metrics.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  admissions: Counter<'agent' | 'outcome'>;
  turns: Counter<'agent' | 'outcome'>;
  turnSeconds: Histogram<'agent'>;
  modelCalls: Counter<'agent' | 'model' | 'outcome'>;
  tokens: Counter<'agent' | 'model' | 'kind'>;
  usageEstimated: Counter<'agent' | 'model'>;
  deliveries: Counter<'platform' | 'outcome'>;
  ledgerWriteFailures: Counter<'operation'>;
  leaseLosses: Counter;
  sweeperRequeued: Counter;
  recoveredUnknown: Counter;
  httpRequests: Counter<'route' | 'status'>;
  oldestPendingDeliverySeconds: Gauge;
  deliveryObligations: Gauge<'state'>;
  prunedDeliveries: Counter;
  configListenerReconnects: Counter;
  followedAdmissions: Gauge;
  admissionPolls: Counter;
}

export function createMetrics(component: string): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ component });
  // Node's own metrics under their standard names (process_*, nodejs_*), as the usual dashboards expect.
  collectDefaultMetrics({ register: registry });
  const r = [registry];
  return {
    registry,
    admissions: new Counter({ name: 'hermes_admissions_total', help: 'Inbound inputs admitted (outcome: admitted | duplicate).', labelNames: ['agent', 'outcome'], registers: r }),
    turns: new Counter({ name: 'hermes_turns_total', help: 'Turns finished by outcome.', labelNames: ['agent', 'outcome'], registers: r }),
    turnSeconds: new Histogram({ name: 'hermes_turn_duration_seconds', help: 'Wall time of a turn, claim to terminal.', labelNames: ['agent'], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600], registers: r }),
    modelCalls: new Counter({ name: 'hermes_model_calls_total', help: 'Model API calls by outcome.', labelNames: ['agent', 'model', 'outcome'], registers: r }),
    tokens: new Counter({ name: 'hermes_model_tokens_total', help: 'Tokens by kind (input, output, cache_read, cache_write, reasoning).', labelNames: ['agent', 'model', 'kind'], registers: r }),
    usageEstimated: new Counter({ name: 'hermes_model_usage_estimated_total', help: 'Model calls whose provider sent no readable token counts (none, or not whole numbers from 0 to 10 M): their tokens, and the cost from them, were estimated from the text (4 characters a token).', labelNames: ['agent', 'model'], registers: r }),
    deliveries: new Counter({ name: 'hermes_deliveries_total', help: 'Delivery attempts by outcome.', labelNames: ['platform', 'outcome'], registers: r }),
    ledgerWriteFailures: new Counter({ name: 'hermes_ledger_write_failures_total', help: 'Ledger writes that failed (alert on any).', labelNames: ['operation'], registers: r }),
    leaseLosses: new Counter({ name: 'hermes_lease_losses_total', help: 'Turns whose session lease was lost before they could finish (recovery settles them as unknown).', registers: r }),
    sweeperRequeued: new Counter({ name: 'hermes_sweeper_requeued_total', help: 'Queued admissions re-enqueued by the outbox sweeper.', registers: r }),
    recoveredUnknown: new Counter({ name: 'hermes_recovered_unknown_total', help: 'Started admissions of dead owners settled as unknown.', registers: r }),
    httpRequests: new Counter({ name: 'hermes_http_requests_total', help: 'HTTP requests by route and status.', labelNames: ['route', 'status'], registers: r }),
    deliveryObligations: new Gauge({ name: 'hermes_delivery_obligations', help: 'Delivery obligations by state (pending, attempting, delivered, failed, abandoned), as of the last sweep.', labelNames: ['state'], registers: r }),
    prunedDeliveries: new Counter({ name: 'hermes_delivery_pruned_total', help: 'Settled delivery obligations pruned (older than 7 days, or past 500 per session).', registers: r }),
    oldestPendingDeliverySeconds: new Gauge({ name: 'hermes_delivery_oldest_pending_seconds', help: 'Age of the oldest undelivered obligation.', registers: r }),
    followedAdmissions: new Gauge({ name: 'hermes_gateway_followed_admissions', help: 'Admissions the gateway follows now for waiting requests and event streams (one status poll covers them all).', registers: r }),
    admissionPolls: new Counter({ name: 'hermes_gateway_admission_polls_total', help: 'Statements the gateway ran to poll followed admissions (one per tick for all of them).', registers: r }),
    configListenerReconnects: new Counter({ name: 'hermes_config_listener_reconnects_total', help: 'Times the config listener (LISTEN hermes_config) reconnected to Postgres after losing its connection.', registers: r }),
  };
}
