// What one tick does with one due CronJob — pure, so every rule is tested without a database:
// which slot fires, which are skipped and why, whether running runs are replaced, and the next
// run. Rules (docs/cron.md):
// - Only the newest due slot can run (as Kubernetes CronJob); older missed ones are recorded
//   skipped: `Missed` without catchUpMissed, `Superseded` with it (the newest runs instead).
// - The newest slot runs if it is no later than its deadline: startingDeadlineSeconds when set,
//   else the grace (2 ticks, at least 120 s) without catchUpMissed, else no limit. Later:
//   skipped, `DeadlineExceeded` (a deadline was set) or `Missed`.
// - A run still going: Forbid skips the slot (`ConcurrencyForbid`), Replace stops it and fires,
//   Allow fires beside it.
// - "Run now" fires a manual run whatever the schedule, suspension or policy.
// - No compiled Agent: the slot is skipped (`AgentNotFound`).
import type { Schedule } from './schedule.js';
import { slotsBetween } from './schedule.js';
import type { CronRow, StoredCronSpec, Trigger } from './runs.js';

/** Missed slots are looked for at most this far back (a job down for months does not enumerate them all). */
const LOOKBACK_MS = 7 * 86_400_000;
/** At most this many skipped slots are recorded per tick (the newest). */
const MAX_SKIPPED = 20;

export interface TickPlan {
  next: Date | null;
  skipped: { slot: Date; trigger: Trigger; reason: string; message: string }[];
  fire?: { slot: Date; trigger: Trigger };
  /** Stop the runs still going before firing (concurrencyPolicy Replace). */
  replace: boolean;
  runNowAt?: Date;
}

export interface PlanInput {
  row: Pick<CronRow, 'agentId' | 'agentName' | 'suspend' | 'nextRunAt' | 'runNowAt'>;
  spec: StoredCronSpec;
  schedule: Schedule;
  now: Date;
  /** Runs of this CronJob not ended yet. */
  active: number;
  graceSeconds: number;
}

const iso = (d: Date) => d.toISOString();

/** The due slots of a scheduled (not suspended) CronJob, oldest first. */
function dueSlots(p: PlanInput): Date[] {
  const first = p.row.nextRunAt;
  if (!first || first > p.now) return [];
  const horizon = new Date(p.now.getTime() - LOOKBACK_MS);
  return first >= horizon ? [first, ...slotsBetween(p.schedule, first, p.now)] : slotsBetween(p.schedule, horizon, p.now);
}

function deadlineSeconds(spec: StoredCronSpec, graceSeconds: number): number {
  if (spec.startingDeadlineSeconds !== undefined) return spec.startingDeadlineSeconds;
  return spec.catchUpMissed ? Number.POSITIVE_INFINITY : graceSeconds;
}

export function planTick(p: PlanInput): TickPlan {
  const { row, spec } = p;
  const plan: TickPlan = { next: row.nextRunAt, skipped: [], replace: false };
  const agentMissing = !row.agentId;
  const skip = (slot: Date, trigger: Trigger, reason: string, message: string) => plan.skipped.push({ slot, trigger, reason, message });
  if (row.runNowAt) {
    plan.runNowAt = row.runNowAt;
    if (agentMissing) skip(row.runNowAt, 'manual', 'AgentNotFound', `Agent "${row.agentName}" is not compiled`);
    else plan.fire = { slot: row.runNowAt, trigger: 'manual' };
  }
  if (row.suspend) return plan;
  const slots = dueSlots(p);
  if (slots.length === 0) {
    // Due, but older than the lookback with no slot since (a monthly job down past its day, an
    // @every longer than 7 days): nothing runs, and the next run moves past now instead of staying due.
    if (row.nextRunAt && row.nextRunAt <= p.now) plan.next = p.schedule.next(p.now);
    return plan;
  }
  const newest = slots.at(-1)!;
  // From the newest slot, not from now: the same for a cron expression (no slot lies between
  // them), and it keeps @every on its grid instead of drifting by each tick's lateness.
  plan.next = p.schedule.next(newest);
  const older = slots.slice(0, -1).slice(-MAX_SKIPPED);
  for (const s of older) {
    skip(s, 'schedule', spec.catchUpMissed ? 'Superseded' : 'Missed',
      spec.catchUpMissed ? `the newer slot ${iso(newest)} ran instead (one catch-up run per CronJob)` : `the scheduler did not run at ${iso(s)} and catchUpMissed is false`);
  }
  decideNewest(p, plan, newest, skip);
  return plan;
}

/** The newest due slot: fired, or skipped (too late, no agent, a manual run took the tick, Forbid). */
function decideNewest(p: PlanInput, plan: TickPlan, newest: Date, skip: (slot: Date, trigger: Trigger, reason: string, message: string) => void): void {
  const { spec } = p;
  const lateSeconds = (p.now.getTime() - newest.getTime()) / 1_000;
  const deadline = deadlineSeconds(spec, p.graceSeconds);
  const limit = spec.startingDeadlineSeconds !== undefined ? 'startingDeadlineSeconds' : 'grace';
  if (lateSeconds > deadline) skip(newest, 'schedule', limit === 'grace' ? 'Missed' : 'DeadlineExceeded', `${Math.round(lateSeconds)} s late, past the ${limit} of ${deadline} s`);
  else if (!p.row.agentId) skip(newest, 'schedule', 'AgentNotFound', `Agent "${p.row.agentName}" is not compiled`);
  else if (plan.fire) skip(newest, 'schedule', 'ConcurrencyForbid', 'a manual run started in the same tick');
  else if (p.active > 0 && spec.concurrencyPolicy === 'Forbid') skip(newest, 'schedule', 'ConcurrencyForbid', `${p.active} run(s) still going and concurrencyPolicy is Forbid`);
  else {
    plan.fire = { slot: newest, trigger: 'schedule' };
    plan.replace = p.active > 0 && spec.concurrencyPolicy === 'Replace';
  }
}
