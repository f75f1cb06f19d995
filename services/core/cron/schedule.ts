// Fire times of a CronJob schedule in its IANA time zone, with Kubernetes CronJob's daylight-saving
// rules (robfig/cron, which the CronJob controller uses): a schedule matches wall-clock times, and
// each real instant whose local time matches fires. So a local time that does not exist (the hour
// skipped when clocks go forward) never fires that day, and one that exists twice (the hour
// repeated when clocks go back) fires twice. cron-parser reads the expression and decides which
// days match (L, #, ranges, macros); this module turns local times into instants, because
// cron-parser's own iteration moves a skipped time to the next hour and fires a repeated one once.
import { CronExpressionParser, type CronExpression } from 'cron-parser';

const units: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DAY_MS = 86_400_000;
/** Longest search for the next matching day (Feb 29 on a Monday is 28 years away; past that, refuse). */
const MAX_SEARCH_DAYS = 366 * 30;

export class ScheduleError extends Error {
  override name = 'ScheduleError';
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Throws a ScheduleError naming the problem when the zone is not an IANA time zone. */
export function checkTimeZone(tz: string): void {
  formatter(tz);
}

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (f) return f;
  try {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
  } catch {
    throw new ScheduleError(`timeZone "${tz}" is not an IANA time zone (e.g. UTC, Europe/Paris, America/New_York)`);
  }
  formatters.set(tz, f);
  return f;
}

/** The wall-clock time of instant `t` in `tz`, as milliseconds of a UTC date with the same fields. */
export function wallClock(t: number, tz: string): number {
  const p: Record<string, number> = {};
  for (const part of formatter(tz).formatToParts(t)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
}

const HOUR_MS = 3_600_000;
const offsets = new Map<string, number>();

/** The zone's UTC offset (ms) at instant `t`, cached per zone and hour (offsets change on whole quarter hours at most). */
function offsetAt(t: number, tz: string): number {
  const key = `${tz}|${Math.floor(t / (HOUR_MS / 4))}`;
  let o = offsets.get(key);
  if (o === undefined) {
    if (offsets.size > 200_000) offsets.clear();
    const s = Math.floor(t / 1_000) * 1_000;
    o = wallClock(s, tz) - s;
    offsets.set(key, o);
  }
  return o;
}

/** The instants whose local time in `tz` is `wall` (ms of a UTC date with those fields): 0 (skipped), 1, or 2 (repeated). */
export function instantsOf(wall: number, tz: string): number[] {
  // The zone's offsets a day either side bracket any transition near `wall`.
  const before = offsetAt(wall - DAY_MS, tz);
  const after = offsetAt(wall + DAY_MS, tz);
  if (before === after) return [wall - before];
  const out = [before, after].map((o) => wall - o).filter((t) => offsetAt(t, tz) + t === wall);
  return [...new Set(out)].sort((a, b) => a - b);
}

export interface Schedule {
  /** The first fire time strictly after `from`. */
  next(from: Date): Date;
}

/** A schedule string read once (parse errors are ScheduleErrors naming the problem). */
export function parseSchedule(schedule: string, timeZone: string): Schedule {
  checkTimeZone(timeZone);
  const every = /^@every ([0-9]+)(s|m|h|d)$/.exec(schedule);
  if (every) {
    const ms = Number(every[1]) * units[every[2]!]!;
    if (ms < 60_000) throw new ScheduleError(`schedule "${schedule}": the shortest interval is 1m (the scheduler ticks every 60 s)`);
    // Past a year the next run would be past what a timestamp holds well ("@every 99999999999d"): say so, not a Postgres error.
    if (ms > 366 * 86_400_000) throw new ScheduleError(`schedule "${schedule}": the longest interval is 366d (use a 5-field schedule for yearly runs)`);
    return { next: (from) => new Date(from.getTime() + ms) };
  }
  let expr: CronExpression;
  try {
    expr = CronExpressionParser.parse(schedule, { tz: 'UTC' });
  } catch (err) {
    throw new ScheduleError(`schedule "${schedule}" is not a valid cron expression: ${(err as Error).message}`);
  }
  const hours = [...expr.fields.hour.values].map(Number).sort((a, b) => a - b);
  const minutes = [...expr.fields.minute.values].map(Number).sort((a, b) => a - b);
  const times = hours.flatMap((h) => minutes.map((m) => (h * 60 + m) * 60_000));
  const first = times[0]!;
  return {
    next(from: Date): Date {
      const after = from.getTime();
      // Start a day early: local midnight may be up to a day behind the UTC date of `from`.
      const local = after + offsetAt(after, timeZone);
      // A wall time more than 3 h before `after`'s own cannot be after it (DST moves clocks by ≤ 2 h).
      const earliest = local - 3 * HOUR_MS;
      let day = Math.floor(local / DAY_MS) * DAY_MS - DAY_MS;
      for (let i = 0; i < MAX_SEARCH_DAYS; i++, day += DAY_MS) {
        if (day + times.at(-1)! < earliest || !expr.includesDate(new Date(day + first))) continue;
        for (const t of times) {
          if (day + t < earliest) continue;
          const hit = instantsOf(day + t, timeZone).find((x) => x > after);
          if (hit !== undefined) return new Date(hit);
        }
      }
      throw new ScheduleError(`schedule "${schedule}" never fires (no matching day within ${MAX_SEARCH_DAYS / 366} years)`);
    },
  };
}

const parsed = new Map<string, Schedule>();

/** {@link parseSchedule}, remembered per (schedule, zone): a tick over thousands of CronJobs parses each distinct schedule once. */
export function cachedSchedule(schedule: string, timeZone: string): Schedule {
  const key = `${timeZone}|${schedule}`;
  let s = parsed.get(key);
  if (!s) {
    if (parsed.size >= 10_000) parsed.clear();
    s = parseSchedule(schedule, timeZone);
    parsed.set(key, s);
  }
  return s;
}

/** The first fire time strictly after `from`. */
export function nextRun(schedule: string, timeZone: string, from: Date): Date {
  return parseSchedule(schedule, timeZone).next(from);
}

/**
 * The fire times in (`after`, `until`], oldest first, at most `limit` (the newest kept when there
 * are more: only recent slots can still run).
 */
export function slotsBetween(s: Schedule, after: Date, until: Date, limit = 100): Date[] {
  const out: Date[] = [];
  for (let t = s.next(after); t <= until; t = s.next(t)) {
    out.push(t);
    if (out.length > limit) out.shift();
  }
  return out;
}
