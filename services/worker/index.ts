// The turn worker process: BullMQ consumers for turns and deliveries, heartbeat, the outbox
// sweeper, and graceful shutdown (stop taking jobs, let running turns finish within the grace
// period, then cancel them; cancelled turns end `interrupted` and their sessions resume later).
import { Worker } from 'bullmq';
import {
  checkEvictionPolicy, deliveryJobSchema, getAdmission, markStopped, queueNames, registerInstance, startSweeper, turnJobSchema,
  type Instance,
} from '../core/index.js';
import { startHeartbeat } from './heartbeat.js';
import { drainSession } from './session-drainer.js';
import { apiAdapter, deliver, type DeliveryAdapter } from './delivery.js';
import { createLoopDeps, type LoopOptions, type TurnDeps } from './turn-runner.js';
import { startControlHub } from './control.js';

export { drainSession } from './session-drainer.js';
export { deliver, apiAdapter, type DeliveryAdapter } from './delivery.js';
export { createLoopDeps, type LoopDeps, type LoopOptions } from './turn-runner.js';
export { startWorkerProbes, type RunningProbes } from './probes.js';

/** A turn's dependencies (its `redis` is the producer/publisher connection; BullMQ consumers make their own). */
export interface WorkerDeps extends Omit<TurnDeps, 'loop' | 'control'> {
  instance?: Instance;
  adapters?: Map<string, DeliveryAdapter>;
  /** Run the outbox sweeper in this process (default true). */
  sweeper?: boolean;
  /** Agent-loop options (tests inject a clock and short stale timeouts). */
  loop?: LoopOptions;
}

export interface RunningWorker {
  instance: Instance;
  close(): Promise<void>;
}

export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const { config, db, log } = deps;
  const warning = await checkEvictionPolicy(deps.redis);
  if (warning) log.warn(warning);
  const instance = deps.instance ?? (await registerInstance(db.pool, 'worker'));
  const shutdown = new AbortController();
  const heart = startHeartbeat(db, instance.id, config.HERMES_HEARTBEAT_SECONDS, log);
  const adapters = deps.adapters ?? new Map([['api', apiAdapter(deps.redis, config.HERMES_QUEUE_PREFIX)]]);
  const control = await startControlHub(deps.redis, config.HERMES_QUEUE_PREFIX, log);
  const drainDeps = { ...deps, instance, shutdown: shutdown.signal, loop: createLoopDeps(config, deps.secrets, deps.loop), control };
  const connection = deps.redis.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true });
  connection.on('error', () => undefined);
  const prefix = config.HERMES_QUEUE_PREFIX;

  const turns = new Worker(queueNames.turns, async (job) => {
    const { admissionId } = turnJobSchema.parse(job.data);
    const adm = await getAdmission(db.pool, admissionId);
    if (!adm || adm.state !== 'queued') return { ran: 0 };
    return { ran: await drainSession(drainDeps, adm.sessionId) };
  }, { connection, prefix, concurrency: config.HERMES_TURN_CONCURRENCY, lockDuration: 60_000 });

  const deliveries = new Worker(queueNames.deliveries, async (job) => {
    const { obligationId } = deliveryJobSchema.parse(job.data);
    return { result: await deliver({ config, db, redis: deps.redis, instance, log, metrics: deps.metrics, adapters }, obligationId) };
  }, { connection, prefix, concurrency: config.HERMES_DELIVERY_CONCURRENCY });

  for (const w of [turns, deliveries]) {
    w.on('error', (err) => log.warn({ err }, 'Queue consumer error'));
    w.on('failed', (job, err) => log.error({ err, job: job?.id, queue: w.name }, 'Job failed'));
  }
  const sweeper = deps.sweeper === false ? undefined : startSweeper(db, deps.queues, config, log, deps.metrics);
  log.info({ instance: instance.id, concurrency: config.HERMES_TURN_CONCURRENCY }, 'Started worker');

  return {
    instance,
    async close() {
      log.info('Stopping worker: no new jobs; running turns get the grace period');
      const grace = setTimeout(() => shutdown.abort(new Error('worker shutting down')), config.HERMES_SHUTDOWN_GRACE_SECONDS * 1_000);
      grace.unref();
      await Promise.allSettled([turns.close(), deliveries.close(), sweeper?.stop()]);
      clearTimeout(grace);
      heart.stop();
      await control.close();
      await markStopped(db.pool, instance.id).catch(() => undefined);
      await connection.quit().catch(() => undefined);
      log.info('Stopped worker');
    },
  };
}
