// The CronJob scheduler: one active across every worker process (a Postgres advisory lock through
// runAsLeader; the others wait as candidates). Each tick reads the compiled CronJobs that are due
// from Postgres and, per CronJob, in one transaction with the row locked (SKIP LOCKED, so even two
// schedulers in the failover window never take the same row): plans the tick (core cron/plan.ts),
// advances next_run_at, records the pending slot, skipped slots and the run, and admits the run's
// turn. After the commit the turn job is enqueued and the pending mark cleared. Ordinary workers
// run the turns. Times come from an injected clock, so tests move time by hand.
import type { Redis } from 'ioredis';
import {
  activeRuns, admitIn, clearPendingSlot, discardQueuedRun, enqueueTurn, listDueSchedules, lockSchedule, markReplaced, parseDeliver, parseSchedule,
  pendingAdmission, planTick, publishSignal, pruneRuns, recordSignal, runAsLeader, storedCronSpecSchema, syncFinishedRuns, writeSlot, cronSessionKey,
  type ActiveRun, type CronReplyTarget, type CronRow, type Db, type Fired, type LeaderTuning, type Leadership, type Logger, type Queues, type SessionSignal, type Sql,
} from '../../core/index.js';

export interface CronDeps {
  db: Db;
  queues: Queues;
  redis: Redis;
  log: Logger;
  /** BullMQ prefix (the control channels of Replace's /stop live under it). */
  prefix: string;
}

export interface TickOptions {
  now: Date;
  /** Due CronJobs taken per tick. @defaultValue 20000 */
  batch?: number;
  /** CronJobs written at once (one transaction and connection each). @defaultValue 4 */
  parallel?: number;
  /** Slots later than this without catchUpMissed or a deadline are missed. @defaultValue 120 */
  graceSeconds?: number;
  /** Test hook: runs after a CronJob's transaction committed, before its turn is enqueued (a throw there is a scheduler dying mid-tick). */
  afterCommit?: (scheduleId: string) => void | Promise<void>;
}

export interface TickReport { fired: number; skipped: number; enqueued: number; synced: number; pruned: number; errors: number }

/** What a CronJob's transaction left to do after its commit. */
interface Committed { row: CronRow; fired?: Fired; pending?: { admissionId: string; sessionId: string }; stops: { signal: SessionSignal; admissionId: string }[]; skipped: number }

const replyTargetOf = (row: CronRow, deliver: string | undefined, skills: string[]): CronReplyTarget =>
  ({ kind: 'cron', cronJob: `${row.namespace}/${row.name}`, deliver: parseDeliver(deliver, `${row.namespace}/${row.name}`), skills });

/** Replace: a queued run is discarded; a started one is stopped by a `/stop` in its own session (its reply stored only). */
async function replaceRuns(sql: Sql, row: CronRow, runs: ActiveRun[]): Promise<Committed['stops']> {
  const stops: Committed['stops'] = [];
  for (const run of runs) {
    if (run.admissionState === 'queued' && (await discardQueuedRun(sql, run))) continue;
    await markReplaced(sql, run);
    const cronJob = `${row.namespace}/${row.name}`;
    const stop = await admitIn(sql, {
      agentId: row.agentId!, platform: 'cron', sessionKey: cronSessionKey(row, run.slot, run.trigger as 'schedule' | 'manual'),
      user: { platformUserId: `cronjob:${cronJob}`, displayName: `CronJob ${cronJob}` }, eventId: `cron-replace:${run.admissionId}`, content: '/stop',
      replyTarget: { kind: 'cron', cronJob, deliver: { platform: 'local' }, skills: [] } satisfies CronReplyTarget,
    });
    if (stop.duplicate) continue;
    stops.push({ admissionId: stop.admissionId, signal: await recordSignal(sql, { sessionId: run.sessionId, admissionId: stop.admissionId, kind: 'stop', text: 'a newer run of its CronJob' }) });
  }
  return stops;
}

/** One CronJob's transaction. Undefined: another scheduler holds it, or nothing to do. */
async function planAndWrite(deps: CronDeps, id: string, opts: TickOptions): Promise<Committed | undefined> {
  return deps.db.tx(async (sql) => {
    const row = await lockSchedule(sql, id);
    if (!row) return undefined;
    const pending = await pendingAdmission(sql, row);
    const spec = storedCronSpecSchema.parse(row.spec);
    const active = await activeRuns(sql, row.id);
    const plan = planTick({ row, spec, schedule: parseSchedule(row.schedule, row.timeZone), now: opts.now, active: active.length, graceSeconds: opts.graceSeconds ?? 120 });
    const stops = plan.replace ? await replaceRuns(sql, row, active) : [];
    const fired = await writeSlot(sql, row, {
      next: plan.next, skipped: plan.skipped, ...(plan.runNowAt ? { runNowAt: plan.runNowAt } : {}),
      ...(plan.fire ? { fire: { ...plan.fire, content: spec.prompt, replyTarget: replyTargetOf(row, spec.deliver, spec.skills) } } : {}),
    });
    return { row, ...(fired ? { fired } : {}), ...(pending ? { pending } : {}), stops, skipped: plan.skipped.length };
  });
}

/** After the commit: stop replaced runs, enqueue the turns, clear the pending mark. */
async function afterCommit(deps: CronDeps, c: Committed, opts: TickOptions): Promise<number> {
  for (const s of c.stops) {
    await publishSignal(deps.redis, deps.prefix, s.signal).catch((err: unknown) => deps.log.warn({ err }, 'Could not announce the stop of a replaced cron run; its worker reads it from Postgres'));
    await enqueueTurn(deps.queues, { admissionId: s.admissionId, sessionId: s.signal.sessionId });
  }
  await opts.afterCommit?.(c.row.id);
  let enqueued = 0;
  for (const job of [c.pending, c.fired]) {
    if (!job) continue;
    await enqueueTurn(deps.queues, { admissionId: job.admissionId, sessionId: job.sessionId });
    enqueued++;
  }
  if (c.fired) await clearPendingSlot(deps.db.pool, c.row.id, c.fired.slot);
  return enqueued;
}

async function processOne(deps: CronDeps, id: string, opts: TickOptions, report: TickReport): Promise<void> {
  const c = await planAndWrite(deps, id, opts);
  if (!c) return;
  report.skipped += c.skipped;
  if (c.fired) {
    report.fired++;
    deps.log.info({ cronjob: `${c.row.namespace}/${c.row.name}`, slot: c.fired.slot.toISOString(), trigger: c.fired.trigger, admission: c.fired.admissionId }, 'Fired CronJob run');
  }
  report.enqueued += await afterCommit(deps, c, opts);
}

/**
 * One tick at `opts.now`: copy ended turns into their runs, fire or skip every due slot, prune
 * history past its limits. A CronJob that fails is logged and retried next tick (its transaction
 * rolled back, nothing half-written); a throw from `afterCommit` (tests) ends the tick there.
 */
export async function cronTick(deps: CronDeps, opts: TickOptions): Promise<TickReport> {
  const report: TickReport = { fired: 0, skipped: 0, enqueued: 0, synced: 0, pruned: 0, errors: 0 };
  const synced = await syncFinishedRuns(deps.db.pool);
  report.synced = synced.length;
  const due = await listDueSchedules(deps.db.pool, opts.now, opts.batch ?? 20_000);
  const touched = new Set(synced);
  let next = 0;
  const worker = async () => {
    while (next < due.length) {
      const row = due[next++]!;
      touched.add(row.id);
      try {
        await processOne(deps, row.id, opts, report);
      } catch (err) {
        if (opts.afterCommit) throw err;
        report.errors++;
        deps.log.error({ err, cronjob: `${row.namespace}/${row.name}` }, 'CronJob tick failed; retried next tick');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.parallel ?? 4, Math.max(due.length, 1)) }, worker));
  report.pruned = await pruneRuns(deps.db.pool, [...touched]);
  return report;
}

/** When the next slot of any running CronJob is due (bounds the scheduler's sleep). */
export async function nextDueAt(sql: Sql): Promise<Date | undefined> {
  const { rows } = await sql.query<{ at: Date | null }>(`SELECT min(next_run_at) AS at FROM cron_schedules WHERE NOT suspend`);
  return rows[0]?.at ?? undefined;
}

export interface SchedulerOptions {
  databaseUrl: string;
  /** Longest wait between ticks (HERMES_CRON_TICK_SECONDS, ≤ 60). */
  tickSeconds: number;
  /** The clock (tests inject one). @defaultValue () => new Date() */
  now?: () => Date;
  /** Waits `ms` or until `signal` aborts (tests inject one). */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
  tuning?: Partial<LeaderTuning>;
  /** Passed to each tick (tests). */
  tick?: Omit<TickOptions, 'now'>;
  /** Called after each tick (tests, metrics). */
  onTick?: (report: TickReport) => void;
}

const realWait = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  if (signal.aborted) return resolve();
  const t = setTimeout(done, ms);
  function done() { clearTimeout(t); signal.removeEventListener('abort', done); resolve(); }
  signal.addEventListener('abort', done, { once: true });
});

/** The leader name every worker campaigns for. */
export const CRON_LEADER = 'hermes-cron-scheduler';

/** Campaigns for the scheduler; while this process leads, ticks until the lock is lost or stopped. */
export function startCronScheduler(deps: CronDeps, opts: SchedulerOptions): Leadership {
  const now = opts.now ?? (() => new Date());
  const wait = opts.wait ?? realWait;
  const tickMs = opts.tickSeconds * 1_000;
  return runAsLeader({
    databaseUrl: opts.databaseUrl, name: CRON_LEADER, log: deps.log, ...(opts.tuning ? { tuning: opts.tuning } : {}),
    lead: async (signal) => {
      while (!signal.aborted) {
        try {
          opts.onTick?.(await cronTick(deps, { ...opts.tick, now: now() }));
        } catch (err) {
          deps.log.error({ err }, 'Cron scheduler tick failed; trying again next tick');
        }
        const due = await nextDueAt(deps.db.pool).catch(() => undefined);
        // Wake at the next slot (a few ms after it), never later than one tick.
        const until = due ? due.getTime() - now().getTime() + 5 : tickMs;
        await wait(Math.max(0, Math.min(tickMs, until)), signal);
      }
    },
  });
}
