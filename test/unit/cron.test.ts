// CronJob schedules and tick rules without a database: Kubernetes CronJob's daylight-saving
// behaviour in two zones (New York, Berlin: a skipped local hour never fires, a repeated one fires
// twice — the cases of robfig/cron's own tests, which the CronJob controller uses), the tick plan
// (catch-up, deadlines, concurrency policies, run now, a missing agent) and the delivery targets.
import { describe, expect, it } from 'vitest';
import { parseDeliver, parseSchedule, planTick, ScheduleError, storedCronSpecSchema, type PlanInput } from '../../services/core/index.js';
import { cronSkillRequest, cronTools, cronToolsets } from '../../services/worker/cron/turn.js';
import { cronJobSpecSchema, scheduleSchema } from '../../operator/api/cronjob.js';

const fires = (expr: string, tz: string, from: string, n: number): string[] => {
  const s = parseSchedule(expr, tz);
  const out: string[] = [];
  let t = new Date(from);
  for (let i = 0; i < n; i++) out.push((t = s.next(t)).toISOString());
  return out;
};

describe('schedule shapes the CRD takes', () => {
  it('takes the nth weekday (#) and the last day (L), as the docs say cron-parser reads them', () => {
    for (const schedule of ['0 9 * * 1#1', '0 9 L * *', '*/15 9-17 * * 1-5', '@every 30m', '@daily']) expect(scheduleSchema.safeParse(schedule).success, schedule).toBe(true);
    for (const schedule of ['0 9 * *', '@reboot', '@every 10x', '0 9 * * 1;rm']) expect(scheduleSchema.safeParse(schedule).success, schedule).toBe(false);
    // The first Monday of the month, the second Friday.
    expect(fires('0 9 * * 1#1', 'UTC', '2026-12-07T10:00:00Z', 2)).toEqual(['2027-01-04T09:00:00.000Z', '2027-02-01T09:00:00.000Z']);
    expect(fires('0 9 * * 5#2', 'Europe/Paris', '2026-12-01T00:00:00Z', 1)).toEqual(['2026-12-11T08:00:00.000Z']);
  });

  it('names what is wrong: an interval past a year, a NUL in the prompt', () => {
    expect(() => parseSchedule('@every 99999999999d', 'UTC')).toThrow(new ScheduleError('schedule "@every 99999999999d": the longest interval is 366d (use a 5-field schedule for yearly runs)'));
    expect(() => parseSchedule('@every 366d', 'UTC')).not.toThrow();
    const spec = cronJobSpecSchema.safeParse({ agentRef: { name: 'a' }, schedule: '@daily', prompt: 'say\u0000hi' });
    expect(spec.success).toBe(false);
    expect(spec.error?.issues[0]).toMatchObject({ path: ['prompt'], message: 'must not contain NUL (U+0000) characters' });
  });
});

describe('schedule in a time zone (Kubernetes CronJob DST rules)', () => {
  it('New York, spring forward: 02:30 does not exist on 11 March, so that day has no run', () => {
    expect(fires('30 2 * * *', 'America/New_York', '2012-03-10T12:00:00Z', 2)).toEqual(['2012-03-12T06:30:00.000Z', '2012-03-13T06:30:00.000Z']);
    // A yearly job on the skipped time waits a whole year (robfig: "0 30 2 11 Mar ?" → 2013).
    expect(fires('30 2 11 3 *', 'America/New_York', '2012-03-01T00:00:00Z', 1)).toEqual(['2013-03-11T06:30:00.000Z']);
    // Hourly: 01:00 EST, then 03:00 EDT (one real hour later).
    expect(fires('0 * * * *', 'America/New_York', '2012-03-11T05:30:00Z', 2)).toEqual(['2012-03-11T06:00:00.000Z', '2012-03-11T07:00:00.000Z']);
  });

  it('New York, fall back: 01:00 happens twice on 4 November, and fires twice', () => {
    expect(fires('0 1 * * *', 'America/New_York', '2012-11-03T12:00:00Z', 3)).toEqual(['2012-11-04T05:00:00.000Z', '2012-11-04T06:00:00.000Z', '2012-11-05T06:00:00.000Z']);
    // 02:30 exists once (after the repeated hour): EST.
    expect(fires('30 2 4 11 *', 'America/New_York', '2012-11-01T00:00:00Z', 1)).toEqual(['2012-11-04T07:30:00.000Z']);
  });

  it('Berlin: 02:30 is skipped on 29 March 2026 and repeated on 25 October 2026', () => {
    expect(fires('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', 2)).toEqual(['2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);
    expect(fires('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 3)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-25T01:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    // Every 15 minutes across the spring gap: 01:45 CET is followed by 03:00 CEST, one real quarter hour later.
    expect(fires('*/15 * * * *', 'Europe/Berlin', '2026-03-29T00:40:00Z', 2)).toEqual(['2026-03-29T00:45:00.000Z', '2026-03-29T01:00:00.000Z']);
  });

  it('reads weekdays, L, macros and @every, and refuses what is not a schedule', () => {
    expect(fires('0 9 * * 1-5', 'Asia/Kolkata', '2026-12-04T00:00:00Z', 2)).toEqual(['2026-12-04T03:30:00.000Z', '2026-12-07T03:30:00.000Z']);
    expect(fires('0 0 L * *', 'UTC', '2026-02-01T00:00:00Z', 1)).toEqual(['2026-02-28T00:00:00.000Z']);
    expect(fires('@daily', 'Europe/Paris', '2026-12-04T12:00:00Z', 1)).toEqual(['2026-12-04T23:00:00.000Z']);
    expect(fires('@every 90m', 'UTC', '2026-12-04T00:00:00Z', 2)).toEqual(['2026-12-04T01:30:00.000Z', '2026-12-04T03:00:00.000Z']);
    expect(() => parseSchedule('0 9 * * *', 'Mars/Olympus')).toThrow(/not an IANA time zone/);
    expect(() => parseSchedule('99 9 * * *', 'UTC')).toThrow(ScheduleError);
    expect(() => parseSchedule('@every 30s', 'UTC')).toThrow(/shortest interval is 1m/);
  });
});

const hourly = parseSchedule('0 * * * *', 'UTC');
const at = (iso: string) => new Date(iso);
function plan(over: { spec?: Record<string, unknown>; row?: Partial<PlanInput['row']>; now: string; active?: number }) {
  return planTick({
    row: { agentId: 'a1', agentName: 'demo', suspend: false, nextRunAt: at('2026-12-05T10:00:00Z'), runNowAt: null, ...over.row },
    spec: storedCronSpecSchema.parse({ prompt: 'p', ...over.spec }), schedule: hourly, now: at(over.now), active: over.active ?? 0, graceSeconds: 120,
  });
}
const reasons = (p: ReturnType<typeof plan>) => p.skipped.map((s) => `${s.slot.toISOString().slice(11, 16)} ${s.reason}`);

describe('tick plan', () => {
  it('fires the due slot on time and moves next_run_at past now', () => {
    const p = plan({ now: '2026-12-05T10:00:30Z' });
    expect(p.fire).toEqual({ slot: at('2026-12-05T10:00:00Z'), trigger: 'schedule' });
    expect(p.next).toEqual(at('2026-12-05T11:00:00Z'));
    expect(p.skipped).toEqual([]);
  });

  it('@every keeps its slots on the interval from the slot, however late the tick that fired it', () => {
    const every = parseSchedule('@every 30m', 'UTC');
    const input = (nextRunAt: string, now: string): PlanInput => ({
      row: { agentId: 'a1', agentName: 'demo', suspend: false, nextRunAt: at(nextRunAt), runNowAt: null },
      spec: storedCronSpecSchema.parse({ prompt: 'p' }), schedule: every, now: at(now), active: 0, graceSeconds: 120,
    });
    // A tick 37 ms after the slot: the next slot is the slot + 30 m, not the tick + 30 m (that drifts a little every run).
    expect(planTick(input('2026-12-05T10:00:00.000Z', '2026-12-05T10:00:00.037Z')).next).toEqual(at('2026-12-05T10:30:00.000Z'));
    // Back after 95 minutes down: the missed slots are on the same grid, and so is the next one.
    const late = planTick(input('2026-12-05T10:00:00.000Z', '2026-12-05T11:35:00.000Z'));
    expect(late.skipped.map((x) => x.slot.toISOString().slice(11, 19))).toEqual(['10:00:00', '10:30:00', '11:00:00', '11:30:00']);
    expect(late.next).toEqual(at('2026-12-05T12:00:00.000Z'));
  });

  it('a next run older than the 7-day lookback with no slot since moves on to the next slot instead of staying due', () => {
    const input = (schedule: string, nextRunAt: string): PlanInput => ({
      row: { agentId: 'a1', agentName: 'demo', suspend: false, nextRunAt: at(nextRunAt), runNowAt: null },
      spec: storedCronSpecSchema.parse({ prompt: 'p' }), schedule: parseSchedule(schedule, 'UTC'), now: at('2026-12-07T20:00:00Z'), active: 0, graceSeconds: 120,
    });
    // Down since before October 15th's run: no 15th in the last 7 days, the next is December 15th.
    const monthly = planTick(input('0 9 15 * *', '2026-10-15T09:00:00Z'));
    expect([monthly.fire, monthly.next]).toEqual([undefined, at('2026-12-15T09:00:00Z')]);
    // An interval longer than the lookback: the next slot is after now, never again in the past.
    const tenDays = planTick(input('@every 10d', '2026-11-20T00:00:00Z'));
    expect(tenDays.fire).toBeUndefined();
    expect(tenDays.next!.getTime()).toBeGreaterThan(at('2026-12-07T20:00:00Z').getTime());
  });

  it('without catchUpMissed: slots missed while down are skipped as Missed, the late newest one too', () => {
    const p = plan({ now: '2026-12-05T12:30:00Z' });
    expect(p.fire).toBeUndefined();
    expect(reasons(p)).toEqual(['10:00 Missed', '11:00 Missed', '12:00 Missed']);
    expect(p.next).toEqual(at('2026-12-05T13:00:00Z'));
  });

  it('with catchUpMissed: the newest missed slot runs, older ones are Superseded; startingDeadlineSeconds bounds it', () => {
    const p = plan({ now: '2026-12-05T12:30:00Z', spec: { catchUpMissed: true } });
    expect(p.fire?.slot).toEqual(at('2026-12-05T12:00:00Z'));
    expect(reasons(p)).toEqual(['10:00 Superseded', '11:00 Superseded']);
    const late = plan({ now: '2026-12-05T12:30:00Z', spec: { catchUpMissed: true, startingDeadlineSeconds: 600 } });
    expect(late.fire).toBeUndefined();
    expect(reasons(late)).toEqual(['10:00 Superseded', '11:00 Superseded', '12:00 DeadlineExceeded']);
    expect(plan({ now: '2026-12-05T12:09:00Z', row: { nextRunAt: at('2026-12-05T12:00:00Z') }, spec: { startingDeadlineSeconds: 600 } }).fire).toBeDefined();
  });

  it('applies the concurrency policy to a run still going', () => {
    expect(reasons(plan({ now: '2026-12-05T10:00:10Z', active: 1 }))).toEqual(['10:00 ConcurrencyForbid']);
    const allow = plan({ now: '2026-12-05T10:00:10Z', active: 1, spec: { concurrencyPolicy: 'Allow' } });
    expect([!!allow.fire, allow.replace]).toEqual([true, false]);
    const replace = plan({ now: '2026-12-05T10:00:10Z', active: 1, spec: { concurrencyPolicy: 'Replace' } });
    expect([!!replace.fire, replace.replace]).toEqual([true, true]);
  });

  it('run now fires a manual run even when suspended; a suspended schedule fires nothing else', () => {
    const p = plan({ now: '2026-12-05T10:00:10Z', row: { suspend: true, runNowAt: at('2026-12-05T10:00:05Z') } });
    expect(p.fire).toEqual({ slot: at('2026-12-05T10:00:05Z'), trigger: 'manual' });
    expect(p.next).toEqual(at('2026-12-05T10:00:00Z'));
    expect(plan({ now: '2026-12-05T10:00:10Z', row: { suspend: true } }).fire).toBeUndefined();
  });

  it('skips a slot whose agent is not compiled, saying so', () => {
    const p = plan({ now: '2026-12-05T10:00:10Z', row: { agentId: null } });
    expect(p.fire).toBeUndefined();
    expect(p.skipped[0]).toMatchObject({ reason: 'AgentNotFound', message: 'Agent "demo" is not compiled' });
  });
});

describe('delivery targets and cron turns', () => {
  it('parses deliver and refuses a chat platform without a channel', () => {
    expect(parseDeliver(undefined, 'default/x')).toEqual({ platform: 'local' });
    expect(parseDeliver('slack:#eng:1712345678.000100', 'default/x')).toEqual({ platform: 'slack', target: { kind: 'slack', channel: '#eng', threadTs: '1712345678.000100' } });
    expect(parseDeliver('telegram:-100123:42', 'default/x')).toEqual({ platform: 'telegram', target: { kind: 'telegram', chatId: -100123, threadId: 42 } });
    expect(parseDeliver('webhook', 'default/x')).toEqual({ platform: 'webhook', target: { kind: 'webhook', cronJob: 'default/x' } });
    expect(() => parseDeliver('slack', 'default/x')).toThrow(/names no slack channel/);
    expect(() => parseDeliver('email:me', 'default/x')).toThrow(/not a delivery target/);
  });

  it('refuses a target its platform can never be sent to, naming what it takes', () => {
    expect(parseDeliver('discord:1234567890', 'default/x')).toEqual({ platform: 'discord', target: { kind: 'discord', channelId: '1234567890' } });
    expect(() => parseDeliver('discord:#general', 'default/x')).toThrow(/discord channel "#general" must be a channel id/);
    expect(parseDeliver('telegram:@news_channel', 'default/x')).toEqual({ platform: 'telegram', target: { kind: 'telegram', chatId: '@news_channel' } });
    expect(() => parseDeliver('telegram:ops', 'default/x')).toThrow(/telegram chat "ops" must be a chat id/);
    expect(() => parseDeliver('slack:#eng:yesterday', 'default/x')).toThrow(/slack thread "yesterday" must be a message ts/);
  });

  it('offers no messaging, clarify or cron tools, and loads the skills in order before the prompt', () => {
    expect(cronToolsets(['core', 'messaging', 'clarify', 'cron', 'web'])).toEqual(['core', 'web']);
    const tool = (name: string, toolset: string) => ({ name, toolset }) as Parameters<typeof cronTools>[0][number];
    expect(cronTools([tool('send_message', 'core'), tool('web_search', 'web'), tool('cronjob', 'x')]).map((t) => t.name)).toEqual(['web_search']);
    const skill = (name: string, body: string) => ({ name, body, files: [] }) as unknown as Parameters<typeof cronSkillRequest>[2][number];
    const r = cronSkillRequest('summarise the day', ['b', 'missing', 'a'], [skill('a', 'A body'), skill('b', 'B body')]);
    expect(r.used.map((s) => s.name)).toEqual(['b', 'a']);
    expect(r.text.indexOf('B body')).toBeLessThan(r.text.indexOf('A body'));
    expect(r.text).toContain('"missing", which this agent does not offer');
    expect(r.text.endsWith('Scheduled task: summarise the day')).toBe(true);
  });
});
