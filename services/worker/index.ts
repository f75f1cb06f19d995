// The turn worker process: BullMQ consumers for turns and deliveries, liveness (heartbeat and
// self-fencing), the outbox sweeper, and graceful shutdown: on SIGTERM no further turn starts
// (sessions are handed to other workers), running sessions are pre-marked `resume_pending`, running
// turns may finish within the grace period, and those still running after it are cut and resume
// once on another worker (SPEC).
import type { KubeConfig } from '@kubernetes/client-node';
import { DelayedError, Worker } from 'bullmq';
import {
  checkEvictionPolicy, closeRedis, deliveryJobSchema, duplicateRedis, redisLiveness, getAdmission, markStopped, queueNames, registerInstance, reviewJobSchema, startSweeper, turnJobSchema,
  type Instance,
} from '../core/index.js';
import { startLiveness } from './liveness.js';
import { drainSession } from './session-drainer.js';
import { ShutdownCut } from './settle.js';
import { deliver, type DeliveryAdapter } from './delivery.js';
import { platformAdapters } from './platform-delivery.js';
import type { TurnDeps } from './turn-runner.js';
import { createLoopDeps, type LoopOptions } from './loop-deps.js';
import { startControlHub } from './control.js';
import { openSandboxBackends } from './sandboxes.js';
import { runReview } from './review.js';
import { runCurator } from '../agent/index.js';
import { cronDelivery } from './cron/delivery.js';
import { startCronScheduler, type SchedulerOptions } from './cron/scheduler.js';

export { drainSession } from './session-drainer.js';
export { deliver, type DeliveryAdapter } from './delivery.js';
export { platformAdapters, slackDelivery, teamsDelivery, telegramDelivery, webhookDelivery } from './platform-delivery.js';
export { createLoopDeps, type LoopDeps, type LoopOptions } from './loop-deps.js';
export { createMcpDeps, type McpDeps } from './mcp-tools.js';
export { startWorkerProbes, type RunningProbes } from './probes.js';
export { cronTick, startCronScheduler, nextDueAt, CRON_LEADER, type CronDeps, type TickOptions, type TickReport, type SchedulerOptions } from './cron/scheduler.js';
export { cronDelivery } from './cron/delivery.js';

/** A turn's dependencies (its `redis` is the producer/publisher connection; BullMQ consumers make their own). */
export interface WorkerDeps extends Omit<TurnDeps, 'loop' | 'control'> {
  instance?: Instance;
  /** Delivery adapters by platform; the chat platforms' (Slack) are added unless given here. */
  adapters?: Map<string, DeliveryAdapter>;
  /** Run the outbox sweeper in this process (default true). */
  sweeper?: boolean;
  /** Agent-loop options (tests inject a clock and short stale timeouts). */
  loop?: LoopOptions;
  /** The CronJob scheduler (one active across workers): false = not in this process; options for tests (clock, waits). @defaultValue on */
  cron?: false | Partial<Omit<SchedulerOptions, 'databaseUrl'>>;
  /** Cluster credentials for the kubernetes sandbox backend (called on its first use). */
  kubeConfig?: () => KubeConfig;
}

/** SPEC: drain pre-marks running sessions resume_pending before waiting (a turn that finishes clears it). */
async function markResumePending(db: WorkerDeps['db'], sessions: string[], log: WorkerDeps['log']): Promise<void> {
  if (sessions.length === 0) return;
  await db.pool.query(`UPDATE sessions SET state = 'resume_pending' WHERE id = ANY($1::uuid[]) AND state = 'active'`, [sessions])
    .catch((err: unknown) => log.warn({ err }, 'Could not mark running sessions resume_pending'));
}

export interface RunningWorker {
  instance: Instance;
  close(): Promise<void>;
}

/** How long past the grace period a cut turn may take to settle before a worker without Redis stops anyway. */
const SETTLE_AFTER_GRACE_SECONDS = 15;

/** Resolves once `running` is empty, or after `boundMs`. */
async function untilIdle(running: ReadonlySet<string>, boundMs: number): Promise<void> {
  const until = Date.now() + boundMs;
  while (running.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
}

export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const { config, db, log } = deps;
  const warning = await checkEvictionPolicy(deps.redis);
  if (warning) log.warn(warning);
  const instance = deps.instance ?? (await registerInstance(db.pool, 'worker'));
  const draining = new AbortController();
  const shutdown = new AbortController();
  const running = new Set<string>();
  const liveness = startLiveness({ databaseUrl: config.DATABASE_URL, instanceId: instance.id, everySeconds: config.HERMES_HEARTBEAT_SECONDS, ttlSeconds: config.HERMES_INSTANCE_TTL_SECONDS, log });
  const adapters = new Map([...platformAdapters(deps), ...(deps.adapters ?? [])]);
  if (!adapters.has('cron')) adapters.set('cron', cronDelivery(() => adapters));
  const control = await startControlHub(deps.redis, config.HERMES_QUEUE_PREFIX, log, config.HERMES_REDIS_TIMEOUT_SECONDS);
  const sandboxes = deps.loop?.sandboxes ?? openSandboxBackends(config, log, { metrics: deps.metrics, ...(deps.kubeConfig ? { kubeConfig: deps.kubeConfig } : {}) });
  const loop = createLoopDeps(config, deps.secrets, { ...deps.loop, sandboxes });
  const drainDeps = { ...deps, instance, liveness, running, draining: draining.signal, shutdown: shutdown.signal, loop, control, adapters };
  const connection = duplicateRedis(deps.redis, { liveness: redisLiveness(config.HERMES_REDIS_TIMEOUT_SECONDS, log, 'queue') });
  const prefix = config.HERMES_QUEUE_PREFIX;

  const turns = new Worker(queueNames.turns, async (job) => {
    const { admissionId, sessionId } = turnJobSchema.parse(job.data);
    if (sessionId) return { ran: await drainSession(drainDeps, sessionId) }; // nothing queued: nothing runs
    const adm = await getAdmission(db.pool, admissionId);
    if (!adm || adm.state !== 'queued') return { ran: 0 };
    return { ran: await drainSession(drainDeps, adm.sessionId) };
  }, { connection, prefix, concurrency: config.HERMES_TURN_CONCURRENCY, lockDuration: 60_000 });

  const deliveries = new Worker(queueNames.deliveries, async (job, token) => {
    const { obligationId } = deliveryJobSchema.parse(job.data);
    let wakeAt: Date | undefined;
    const result = await deliver({ config, db, redis: deps.redis, instance, log, metrics: deps.metrics, adapters, judge: liveness, onDeferred: (at) => { wakeAt = at; } }, obligationId);
    // Rate-limited: this job waits in the delayed set until the platform's Retry-After (its id stays taken, so the sweeper does not enqueue it twice).
    if (wakeAt && token) {
      await job.moveToDelayed(wakeAt.getTime(), token);
      throw new DelayedError();
    }
    return { result };
  }, { connection, prefix, concurrency: config.HERMES_DELIVERY_CONCURRENCY });

  // The learning loop: background reviews of finished turns. Best effort: a stopping worker aborts
  // the ones it runs (recorded failed, never retried) instead of holding its shutdown for them.
  const reviews = new Worker(queueNames.reviews, async (job) => {
    const { admissionId } = reviewJobSchema.parse(job.data);
    return { outcome: await runReview({ ...deps, loop }, admissionId, draining.signal) };
  }, { connection, prefix, concurrency: config.HERMES_REVIEW_CONCURRENCY });

  // Cut off from Postgres, every job would fail (and be re-enqueued later): leave them to workers that can run them.
  liveness.onHealthChange((healthy) => {
    log.warn({ healthy }, healthy ? 'Postgres reachable again; taking jobs' : 'Cannot confirm our heartbeat; pausing job intake');
    for (const w of [turns, deliveries, reviews]) void (async () => (healthy ? w.resume() : w.pause(true)))().catch(() => undefined);
  });
  for (const w of [turns, deliveries, reviews]) {
    w.on('error', (err) => log.warn({ err }, 'Queue consumer error'));
    w.on('failed', (job, err) => log.error({ err, job: job?.id, queue: w.name }, 'Job failed'));
  }
  const sweeper = deps.sweeper === false ? undefined : startSweeper(db, deps.queues, config, log, { metrics: deps.metrics, judge: liveness });
  // The skill curator over every agent's learned skills: at start, then every interval (SPEC: weekly).
  const curate = () => void runCurator(db, new Date()).then((r) => { if (r.stale.length || r.archived.length) log.info(r, 'Curator marked learned skills'); })
    .catch((err: unknown) => log.warn({ err }, 'The skill curator failed; it runs again at the next interval'));
  const curator = deps.sweeper === false ? undefined : setInterval(curate, config.HERMES_CURATOR_INTERVAL_HOURS * 3_600_000);
  curator?.unref();
  if (curator) curate();
  const cron = deps.cron === false ? undefined : startCronScheduler({ db, queues: deps.queues, redis: deps.redis, log, prefix },
    { databaseUrl: config.DATABASE_URL, tickSeconds: config.HERMES_CRON_TICK_SECONDS, ...deps.cron });
  log.info({ instance: instance.id, concurrency: config.HERMES_TURN_CONCURRENCY }, 'Started worker');

  return {
    instance,
    async close() {
      draining.abort();
      log.info({ running: running.size }, 'Stopping worker: no new turns; running turns get the grace period');
      await markResumePending(db, [...running], log);
      const grace = setTimeout(() => shutdown.abort(new ShutdownCut()), config.HERMES_SHUTDOWN_GRACE_SECONDS * 1_000);
      grace.unref();
      clearInterval(curator);
      const consumers = [turns, deliveries, reviews];
      if (connection.status === 'ready') {
        await Promise.allSettled([...consumers.map((w) => w.close()), sweeper?.stop(), cron?.stop()]);
      } else {
        // BullMQ's polite close marks each finished job in Redis and QUITs its connections: with
        // Redis down both wait in the offline queue for as long as the outage lasts. So wait for our
        // own turns (they settle in Postgres; the grace period cuts them), then close without
        // Redis; a job left active there is picked up again by BullMQ's stalled-job check, and the
        // ledger makes it a no-op.
        log.warn({ running: running.size }, 'Redis is not reachable: closing the queue consumers without it once the running turns end');
        await untilIdle(running, (config.HERMES_SHUTDOWN_GRACE_SECONDS + SETTLE_AFTER_GRACE_SECONDS) * 1_000);
        await Promise.allSettled([...consumers.map((w) => w.close(true)), sweeper?.stop(), cron?.stop()]);
      }
      clearTimeout(grace);
      loop.processes?.close();
      await loop.mcp?.pool.close().catch(() => undefined);
      await loop.webGuard?.close().catch(() => undefined);
      await sandboxes.close();
      await liveness.stop();
      await control.close();
      await markStopped(db.pool, instance.id).catch(() => undefined);
      await closeRedis(connection);
      log.info('Stopped worker');
    },
  };
}
