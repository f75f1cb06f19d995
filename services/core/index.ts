// The public surface of services/core: everything else imports from here.
export * from './config.js';
export * from './db.js';
export * from './errors.js';
export * from './logger.js';
export * from './metrics.js';
export * from './tracing.js';
export * from './queues.js';
export * from './events.js';
export * from './compiled.js';
export * from './agents.js';
export * from './sweeper.js';
export * from './ledger/instances.js';
export * from './ledger/leases.js';
export * from './ledger/messages.js';
export * from './ledger/admissions.js';
export * from './ledger/turns.js';
export * from './ledger/deliveries.js';
