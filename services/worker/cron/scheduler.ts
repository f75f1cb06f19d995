// The CronJob scheduler: one active across every worker process (a Postgres advisory lock through
// runAsLeader; the others wait as candidates). Each tick reads the compiled CronJobs that are due
// from Postgres and, per CronJob, in one transaction with the row locked (SKIP LOCKED, so even two
// schedulers in the failover window never take the same row): plans the tick (core cron/plan.ts),
// advances next_run_at, records the pending slot, skipped slots and the run, and admits the run's
// turn. CronJobs are written in chunks (one commit each; a savepoint per CronJob). After the
// commit the turn jobs are enqueued in one round trip and the pending marks cleared. Ordinary workers
// run the turns. Times come from an injected clock, so tests move time by hand.
import type { Redis } from 'ioredis';
import {
  activeRunsOf, admitIn, pause, clearPendingSlots, discardQueuedRun, listDueSchedules, lockSchedules, markReplaced, parseDeliver, cachedSchedule,
  pendingAdmissions, planTick, publishSignal, ScheduleError, pruneRuns, recordSignal, runAsLeader, storedCronSpecSchema, syncFinishedRuns, writeSlot, cronSessionKey,
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
  /** CronJobs written per transaction (one commit, one queue round trip for their turns). @defaultValue 50 */
  chunk?: number;
  /** Transactions in flight at once (one connection each). @defaultValue 4 */
  parallel?: number;
  /** Slots later than this without catchUpMissed or a deadline are missed. @defaultValue 120 */
  graceSeconds?: number;
  /** Test hook: runs for each CronJob after its transaction committed, before its turn is enqueued (a throw there is a scheduler dying mid-tick). */
  afterCommit?: (scheduleId: string) => void | Promise<void>;
  /** Called once a fired run's turn is enqueued (benchmarks measure the dispatch lag with it). */
  onDispatched?: (fired: Fired) => void;
}

export interface TickReport { fired: number; skipped: number; enqueued: number; synced: number; pruned: number; errors: number }

/** What a CronJob's write left to do after the commit. */
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

/**
 * The run's reply target, or why its stored deliver cannot be sent to (a CronJob stored before a
 * stricter check): then the slot is skipped, `InvalidDeliver`, and the schedule moves on.
 */
function targetOf(row: CronRow, spec: { deliver?: string | undefined; skills: string[] }): CronReplyTarget | string {
  try {
    return replyTargetOf(row, spec.deliver, spec.skills);
  } catch (err) {
    if (err instanceof ScheduleError) return err.message;
    throw err;
  }
}

/** One locked CronJob's write: plan the tick, stop replaced runs, advance, record, admit. */
async function writeRow(sql: Sql, row: CronRow, active: ActiveRun[], opts: TickOptions): Promise<Omit<Committed, 'pending'>> {
  const spec = storedCronSpecSchema.parse(row.spec);
  const plan = planTick({ row, spec, schedule: cachedSchedule(row.schedule, row.timeZone), now: opts.now, active: active.length, graceSeconds: opts.graceSeconds ?? 120 });
  const target = plan.fire ? targetOf(row, spec) : undefined;
  if (plan.fire && typeof target === 'string') {
    plan.skipped.push({ ...plan.fire, reason: 'InvalidDeliver', message: target });
    plan.fire = undefined;
    plan.replace = false;
  }
  const stops = plan.replace ? await replaceRuns(sql, row, active) : [];
  const fired = await writeSlot(sql, row, {
    next: plan.next, skipped: plan.skipped, ...(plan.runNowAt ? { runNowAt: plan.runNowAt } : {}),
    ...(plan.fire && typeof target === 'object' ? { fire: { ...plan.fire, content: spec.prompt, replyTarget: target } } : {}),
  });
  return { row, ...(fired ? { fired } : {}), stops, skipped: plan.skipped.length };
}

/**
 * One transaction for a chunk of CronJobs, their rows locked (SKIP LOCKED: rows another scheduler
 * holds are its). A failing CronJob rolls the chunk back; processChunk then writes its CronJobs one
 * per transaction, so only the failing one waits for the next tick.
 */
async function writeChunk(deps: CronDeps, ids: string[], opts: TickOptions): Promise<Committed[]> {
  return deps.db.tx(async (sql) => {
    const rows = await lockSchedules(sql, ids);
    const pending = await pendingAdmissions(sql, rows);
    const active = await activeRunsOf(sql, rows.map((r) => r.id));
    const out: Committed[] = [];
    for (const row of rows) {
      const c = await writeRow(sql, row, active.get(row.id) ?? [], opts);
      const p = pending.get(row.id);
      out.push(p ? { ...c, pending: p } : c);
    }
    return out;
  });
}

/** After the commit: stop replaced runs, enqueue the turns (one round trip), clear the pending marks. */
async function afterCommit(deps: CronDeps, committed: Committed[], opts: TickOptions): Promise<number> {
  const jobs: { admissionId: string; sessionId: string }[] = [];
  for (const c of committed) {
    for (const s of c.stops) {
      await publishSignal(deps.redis, deps.prefix, s.signal).catch((err: unknown) => deps.log.warn({ err }, 'Could not announce the stop of a replaced cron run; its worker reads it from Postgres'));
      jobs.push({ admissionId: s.admissionId, sessionId: s.signal.sessionId });
    }
    await opts.afterCommit?.(c.row.id);
    if (c.pending) jobs.push(c.pending);
    if (c.fired) jobs.push(c.fired);
  }
  if (jobs.length === 0) return 0;
  await deps.queues.turns.addBulk(jobs.map((j) => ({ name: 'turn', data: { admissionId: j.admissionId, sessionId: j.sessionId }, opts: { jobId: j.admissionId } })));
  const fired = committed.flatMap((c) => (c.fired ? [c.fired] : []));
  for (const f of fired) opts.onDispatched?.(f);
  await clearPendingSlots(deps.db.pool, fired.map((f) => ({ scheduleId: f.scheduleId, slot: f.slot })));
  return jobs.length;
}

/** The chunk in one transaction; if it fails, each CronJob in its own (the failing one is logged and retried next tick). */
async function writeChunkOrEach(deps: CronDeps, ids: string[], opts: TickOptions, report: TickReport): Promise<Committed[]> {
  try {
    return await writeChunk(deps, ids, opts);
  } catch (err) {
    if (ids.length === 1) {
      report.errors++;
      deps.log.error({ err, cronjob: ids[0] }, 'CronJob tick failed; retried next tick');
      return [];
    }
    const out: Committed[] = [];
    for (const id of ids) out.push(...(await writeChunkOrEach(deps, [id], opts, report)));
    return out;
  }
}

async function processChunk(deps: CronDeps, ids: string[], opts: TickOptions, report: TickReport): Promise<void> {
  const committed = await writeChunkOrEach(deps, ids, opts, report);
  for (const c of committed) {
    report.skipped += c.skipped;
    if (!c.fired) continue;
    report.fired++;
    deps.log.debug({ cronjob: `${c.row.namespace}/${c.row.name}`, slot: c.fired.slot.toISOString(), trigger: c.fired.trigger, admission: c.fired.admissionId }, 'Fired CronJob run');
  }
  const enqueued = await afterCommit(deps, committed, opts); // not `+= await`: writers run in parallel
  report.enqueued += enqueued;
}

/**
 * One tick at `opts.now`: copy ended turns into their runs, fire or skip every due slot, prune
 * history past its limits. A chunk whose transaction fails is logged and retried next tick
 * (nothing half-written); a throw from `afterCommit` (tests) ends the tick there.
 */
export async function cronTick(deps: CronDeps, opts: TickOptions): Promise<TickReport> {
  const report: TickReport = { fired: 0, skipped: 0, enqueued: 0, synced: 0, pruned: 0, errors: 0 };
  const synced = await syncFinishedRuns(deps.db.pool);
  report.synced = synced.length;
  const due = await listDueSchedules(deps.db.pool, opts.now, opts.batch ?? 20_000);
  const size = opts.chunk ?? 50;
  const chunks: string[][] = [];
  for (let i = 0; i < due.length; i += size) chunks.push(due.slice(i, i + size).map((r) => r.id));
  let next = 0;
  const writer = async () => {
    while (next < chunks.length) {
      const ids = chunks[next++]!;
      try {
        await processChunk(deps, ids, opts, report);
      } catch (err) {
        if (opts.afterCommit) throw err;
        report.errors++;
        deps.log.error({ err, cronjobs: ids.length }, 'A chunk of CronJobs failed; retried next tick');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.parallel ?? 4, Math.max(chunks.length, 1)) }, writer));
  report.pruned = await pruneRuns(deps.db.pool, [...new Set([...synced, ...due.map((r) => r.id)])]);
  if (report.fired || report.skipped || report.errors) deps.log.info(report, 'Cron scheduler tick');
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

/** The pause when a CronJob is still due right after a tick: a failing row must not spin the leader. */
const STILL_DUE_PAUSE_MS = 1_000;

/** The leader name every worker campaigns for. */
export const CRON_LEADER = 'hermes-cron-scheduler';

/** Campaigns for the scheduler; while this process leads, ticks until the lock is lost or stopped. */
export function startCronScheduler(deps: CronDeps, opts: SchedulerOptions): Leadership {
  const now = opts.now ?? (() => new Date());
  const wait = opts.wait ?? pause;
  const tickMs = opts.tickSeconds * 1_000;
  return runAsLeader({
    databaseUrl: opts.databaseUrl, name: CRON_LEADER, log: deps.log, ...(opts.tuning ? { tuning: opts.tuning } : {}),
    lead: async (signal) => {
      while (!signal.aborted) {
        try {
          // Ticked first, reported after: `onTick?.(await cronTick())` would skip the tick itself when nobody listens.
          const report = await cronTick(deps, { ...opts.tick, now: now() });
          opts.onTick?.(report);
        } catch (err) {
          deps.log.error({ err }, 'Cron scheduler tick failed; trying again next tick');
        }
        const due = await nextDueAt(deps.db.pool).catch(() => undefined);
        // Wake at the next slot (a few ms after it), never later than one tick. Still due right
        // after a tick (more due than one tick writes, or a row that failed): again in a second, not at once.
        const until = due ? due.getTime() - now().getTime() + 5 : tickMs;
        await wait(Math.min(tickMs, until > 5 ? until : STILL_DUE_PAUSE_MS), signal);
      }
    },
  });
}
