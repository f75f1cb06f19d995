// CronJob controller: checks the schedule (cron-parser), time zone and delivery target, resolves
// the Agent, writes the compiled schedule to Postgres and reports what the scheduler did from the
// database: lastScheduleTime, nextScheduleTime, lastSuccessfulTime, active runs, the last outcome.
// A new value of the hermes.dev/run-now annotation asks for one run now. Conditions: Valid, Ready.
import { cronStatus, parseDeliver, requestRunNow, type CronDelivery } from '../../services/core/index.js';
import { cronJobSchema, runNowAnnotation, type CronJob } from '../api/cronjob.js';
import { cronHash, deleteSchedule, findSchedule, upsertSchedule, type ScheduleRow } from '../cron/store.js';
import { nextRun, ScheduleError } from '../cron/schedule.js';
import { keyOf, parseKey } from '../runtime/kube.js';
import type { ReconcileResult } from '../runtime/controller.js';
import type { OperatorContext, RawObject } from './context.js';
import { prepare, releaseFinalizer, writeStatus, zodMessage, type StatusDraft } from './status.js';

export const cronJobConditions = ['Valid', 'Ready'] as const;
/** Re-read the schedule's row at least this often, so status follows the scheduler. */
const refreshMs = 60_000;

const iso = (d: Date | null | undefined) => (d ? d.toISOString().replace(/\.\d{3}Z$/, 'Z') : undefined);

function invalid(reason: string, message: string): StatusDraft {
  return { applied: false, conditions: [{ type: 'Valid', status: 'False', reason, message }, { type: 'Ready', status: 'False', reason, message: `Fix the spec: ${message}` }] };
}

async function store(ctx: OperatorContext, job: CronJob, next: Date): Promise<ScheduleRow> {
  const { namespace, name } = job.metadata;
  const row = await findSchedule(ctx.db, namespace, name);
  if (row?.hash === cronHash(job.spec)) return row;
  ctx.log.info({ cronjob: `${namespace}/${name}`, next: iso(next) }, 'Stored CronJob schedule');
  return upsertSchedule(ctx.db, job, next);
}

/** A new value of the hermes.dev/run-now annotation asks for one run (the value is remembered: asked once). */
async function runNowFromAnnotation(ctx: OperatorContext, job: CronJob, obj: RawObject): Promise<void> {
  const { namespace, name } = job.metadata;
  const token = obj.metadata.annotations?.[runNowAnnotation];
  // Logged once per value: the CronJob is reconciled every minute with the annotation still on it.
  if (token && (await requestRunNow(ctx.db, namespace, name, token)) === 'requested') ctx.log.info({ cronjob: `${namespace}/${name}`, token }, 'Requested a CronJob run now (annotation)');
}

/** Ready and the status fields, from what the scheduler recorded in Postgres. */
async function reported(ctx: OperatorContext, job: CronJob, row: ScheduleRow): Promise<Pick<StatusDraft, 'fields'> & { conditions: StatusDraft['conditions'] }> {
  const st = await cronStatus(ctx.db.pool, job.metadata.namespace, job.metadata.name);
  const next = st?.nextRunAt ?? row.nextRunAt;
  const valid = { type: 'Valid', status: 'True' as const, reason: 'Valid', message: `Schedule "${job.spec.schedule}" in ${job.spec.timeZone}.` };
  const ready = { type: 'Ready', status: 'True' as const, reason: job.spec.suspend ? 'Suspended' : 'Scheduled', message: job.spec.suspend ? 'Suspended: no new runs are scheduled.' : `Next run at ${iso(next)}.` };
  return {
    conditions: [valid, ready],
    fields: {
      lastScheduleTime: iso(st?.lastScheduleTime ?? row.lastRunAt), nextScheduleTime: job.spec.suspend ? undefined : iso(next),
      lastRunStatus: st?.lastStatus ?? row.lastStatus ?? undefined, lastSuccessfulTime: iso(st?.lastSuccessfulTime),
      active: st?.active.length ? st.active.map((r) => ({ scheduledTime: iso(r.slot)!, admission: r.admissionId })) : undefined,
    },
  };
}

/**
 * Why the Agent cannot send this CronJob's results where `deliver` points (it lacks that platform,
 * or a webhook callbackUrl), or undefined when it can. Runs still happen and are stored.
 */
function deliveryProblem(deliver: CronDelivery, agent: RawObject): string | undefined {
  if (deliver.platform === 'local') return undefined;
  const platforms = ((agent.spec as { platforms?: { type?: string; callbackUrl?: string }[] } | undefined)?.platforms ?? []);
  const name = `Agent "${agent.metadata.name}"`;
  if (deliver.platform === 'webhook') {
    return platforms.some((p) => p.type === 'webhook' && p.callbackUrl) ? undefined : `${name} has no webhook platform with a callbackUrl to POST the result to`;
  }
  return platforms.some((p) => p.type === deliver.platform) ? undefined : `${name} has no ${deliver.platform} platform (its bot token sends the result)`;
}

async function draftFor(ctx: OperatorContext, obj: RawObject): Promise<StatusDraft> {
  const parsed = cronJobSchema.safeParse(obj);
  if (!parsed.success) return invalid('InvalidSpec', zodMessage(parsed.error.issues));
  const job = parsed.data;
  let next: Date;
  let deliver: CronDelivery;
  try {
    next = nextRun(job.spec.schedule, job.spec.timeZone, new Date());
    deliver = parseDeliver(job.spec.deliver, `${job.metadata.namespace}/${job.metadata.name}`);
  } catch (err) {
    if (err instanceof ScheduleError) return invalid(err.message.startsWith('deliver:') ? 'InvalidDeliver' : 'InvalidSchedule', err.message);
    throw err;
  }
  const valid = { type: 'Valid', status: 'True' as const, reason: 'Valid', message: `Schedule "${job.spec.schedule}" in ${job.spec.timeZone}.` };
  const agent = ctx.caches.agents.get(job.spec.agentRef.name, job.metadata.namespace);
  if (!agent) {
    return { applied: false, conditions: [valid, { type: 'Ready', status: 'False', reason: 'AgentNotFound', message: `Agent "${job.spec.agentRef.name}" not found in namespace ${job.metadata.namespace}: create it or fix spec.agentRef.name.` }] };
  }
  const row = await store(ctx, job, next);
  await runNowFromAnnotation(ctx, job, obj);
  const status = await reported(ctx, job, row);
  const problem = deliveryProblem(deliver, agent);
  if (problem) {
    const ready = status.conditions.find((c) => c.type === 'Ready')!;
    Object.assign(ready, { status: 'False', reason: 'DeliveryNotConfigured',
      message: `${ready.message} Runs are stored, but deliver "${job.spec.deliver}" cannot be sent: ${problem}. Add it to the Agent, or set deliver: local.` });
  }
  return { applied: true, ...status };
}

export async function reconcileCronJob(ctx: OperatorContext, key: string): Promise<ReconcileResult | void> {
  const { namespace, name } = parseKey(key);
  const obj = ctx.caches.cronjobs.get(name, namespace);
  if (!obj) return;
  if (obj.metadata.deletionTimestamp) {
    const rows = await deleteSchedule(ctx.db, namespace, name);
    ctx.log.info({ cronjob: keyOf(obj), rows }, 'Deleted CronJob schedule from Postgres');
    return releaseFinalizer(ctx, 'cronjobs', obj);
  }
  if (!(await prepare(ctx, 'cronjobs', obj, cronJobConditions))) return;
  const draft = await draftFor(ctx, obj);
  const ready = draft.conditions.find((c) => c.type === 'Ready')!;
  if (await writeStatus(ctx, 'cronjobs', obj, draft)) {
    ctx.log.info({ cronjob: key, ready: ready.status, reason: ready.reason }, 'Updated CronJob status');
    if (ready.status === 'False') await ctx.events.emit(obj, 'Warning', ready.reason, ready.message);
  }
  return draft.applied ? { requeueAfterMs: refreshMs } : undefined;
}
