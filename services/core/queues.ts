// Queue names and job payloads. Redis/BullMQ only carries wake-ups that can be rebuilt from
// Postgres: a turn job names an admission, a delivery job names an obligation. Job ids are the
// row ids, so re-enqueueing (the outbox sweeper) is idempotent.
import { Queue, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { reportOutages, watchLiveness, type RedisLivenessOptions } from './redis-liveness.js';

export const queueNames = { turns: 'turns', deliveries: 'deliveries', reviews: 'reviews' } as const;

export const turnJobSchema = z.object({
  admissionId: z.string().uuid(),
  /** The admission's session, when the producer knows it: the worker then needs no read to find it. */
  sessionId: z.string().uuid().optional(),
  /** W3C trace context of the admitting request. */
  trace: z.record(z.string(), z.string()).optional(),
});
export type TurnJob = z.infer<typeof turnJobSchema>;

export const deliveryJobSchema = z.object({
  obligationId: z.string().uuid(),
  trace: z.record(z.string(), z.string()).optional(),
});
export type DeliveryJob = z.infer<typeof deliveryJobSchema>;

/** A background review of one finished turn (the learning loop): best effort, once per admission. */
export const reviewJobSchema = z.object({ admissionId: z.string().uuid() });
export type ReviewJob = z.infer<typeof reviewJobSchema>;

/** Finished jobs are removed so that the sweeper may add the same id again if ever needed. */
export const defaultJobOptions: JobsOptions = { removeOnComplete: true, removeOnFail: { count: 1000 }, attempts: 1 };

export interface RedisOptions {
  /** Fail commands at once while disconnected (producers on a request path) instead of queueing them. */
  failFast?: boolean;
  /** The silent-connection watchdog (redis-liveness.ts); `false` turns it off. @defaultValue defaultLiveness */
  liveness?: RedisLivenessOptions | false;
}

/** TCP keepalive on every connection: the kernel notices a peer that vanished even while idle. */
const keepAliveMs = 10_000;

const clientOptions = (opts: RedisOptions) => ({
  maxRetriesPerRequest: opts.failFast ? 1 : null,
  enableOfflineQueue: !opts.failFast,
  retryStrategy: (times: number) => Math.min(times * 200, 2_000),
  keepAlive: keepAliveMs,
});

function guard(redis: Redis, opts: RedisOptions): Redis {
  redis.on('error', () => undefined); // reconnects on its own; readiness reports the outage
  if (opts.liveness === false) return redis;
  watchLiveness(redis, opts.liveness);
  if (opts.liveness?.log) reportOutages(redis, opts.liveness.log, opts.liveness.name);
  return redis;
}

/**
 * A Redis connection that reconnects on its own (capped backoff) and is replaced when it goes
 * silent. `failFast` connections reject commands while down instead of queueing them.
 */
export function connectRedis(url: string, opts: RedisOptions = {}): Redis {
  return guard(new Redis(url, { ...clientOptions(opts), lazyConnect: false }), opts);
}

/**
 * Ends a connection: QUIT when it is up (replies still due arrive first), else at once — a QUIT
 * sent while Redis cannot be reached waits in the offline queue until Redis is back, so a process
 * told to stop during an outage never ended.
 */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  await redis.quit().catch(() => redis.disconnect());
}

/** A second connection to the same server as `redis` (a subscriber, a BullMQ worker's), guarded like `connectRedis`'s. */
export function duplicateRedis(redis: Redis, opts: RedisOptions = {}): Redis {
  return guard(redis.duplicate(clientOptions(opts)), opts);
}

export interface Queues {
  turns: Queue<TurnJob>;
  deliveries: Queue<DeliveryJob>;
  reviews: Queue<ReviewJob>;
  close(): Promise<void>;
}

export function openQueues(redis: Redis, prefix: string): Queues {
  const turns = new Queue<TurnJob>(queueNames.turns, { connection: redis, prefix, defaultJobOptions });
  const deliveries = new Queue<DeliveryJob>(queueNames.deliveries, { connection: redis, prefix, defaultJobOptions });
  const reviews = new Queue<ReviewJob>(queueNames.reviews, { connection: redis, prefix, defaultJobOptions });
  turns.on('error', () => undefined);
  deliveries.on('error', () => undefined);
  reviews.on('error', () => undefined);
  return {
    turns,
    deliveries,
    reviews,
    async close() {
      await Promise.allSettled([turns.close(), deliveries.close(), reviews.close()]);
    },
  };
}

/** Adds the wake-up for `job.admissionId`; the job id is the admission id unless `jobId` is given (a hand-off). */
export async function enqueueTurn(queues: Queues, job: TurnJob, jobId = job.admissionId): Promise<void> {
  await queues.turns.add('turn', job, { jobId });
}

/** Adds the background review of a finished turn (job id `review-<admission>`: one per admission). */
export async function enqueueReview(queues: Queues, job: ReviewJob): Promise<void> {
  await queues.reviews.add('review', job, { jobId: `review-${job.admissionId}` });
}

/** `retake`: a new job for an abandoned attempt (its old job may still be locked by a dead worker), one per attempt count. */
export async function enqueueDelivery(queues: Queues, job: DeliveryJob, retake?: { attempts: number }): Promise<void> {
  await queues.deliveries.add('delivery', job, { jobId: retake ? `${job.obligationId}:retake:${retake.attempts}` : job.obligationId });
}

/** Channel on which a session's turn events (deltas, finish) and control signals are published. */
export const admissionChannel = (prefix: string, admissionId: string) => `${prefix}:admission:${admissionId}`;
export const sessionControlChannel = (prefix: string, sessionId: string) => `${prefix}:session:${sessionId}:control`;

/**
 * BullMQ loses jobs when Redis evicts keys. Returns a warning when the policy is not
 * `noeviction`, or undefined when it is (or cannot be read, e.g. CONFIG is disabled).
 */
export async function checkEvictionPolicy(redis: Redis): Promise<string | undefined> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy && policy !== 'noeviction') {
      return `Redis maxmemory-policy is "${policy}", not "noeviction": under memory pressure Redis will evict BullMQ jobs and turns will be lost until the sweeper re-enqueues them. Set "maxmemory-policy noeviction".`;
    }
  } catch {
    return undefined;
  }
  return undefined;
}
