// Next fire times of a CronJob schedule: 5-field cron and macros through cron-parser (in the
// job's time zone), `@every <n><unit>` as a fixed interval.
import { CronExpressionParser } from 'cron-parser';

const units: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export class ScheduleError extends Error {
  override name = 'ScheduleError';
}

/** Throws a ScheduleError naming the problem when the zone is not an IANA time zone. */
export function checkTimeZone(tz: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw new ScheduleError(`timeZone "${tz}" is not an IANA time zone (e.g. UTC, Europe/Paris, America/New_York)`);
  }
}

/** The first fire time strictly after `from`. */
export function nextRun(schedule: string, timeZone: string, from: Date): Date {
  checkTimeZone(timeZone);
  const every = /^@every ([0-9]+)(s|m|h|d)$/.exec(schedule);
  if (every) {
    const ms = Number(every[1]) * units[every[2]!]!;
    if (ms < 60_000) throw new ScheduleError(`schedule "${schedule}": the shortest interval is 1m (the scheduler ticks every 60 s)`);
    return new Date(from.getTime() + ms);
  }
  try {
    return CronExpressionParser.parse(schedule, { currentDate: from, tz: timeZone }).next().toDate();
  } catch (err) {
    throw new ScheduleError(`schedule "${schedule}" is not a valid cron expression: ${(err as Error).message}`);
  }
}
