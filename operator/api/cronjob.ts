// CronJob: a scheduled prompt for an agent (Hermes cron). The schedule's shape is checked by the
// apiserver (CEL); whether it is a real schedule (e.g. minute 99) by the controller with
// cron-parser, reported in status.
import { z } from 'zod';
import { apiVersion, baseStatusShape, doc, localObjectRefSchema, objectMetaSchema, specLimits, withoutNul, withRules } from './common.js';

const field = '[0-9A-Za-z*/,?#-]+';
/** 5-field cron, or a macro (@daily…), or @every <n>s|m|h|d. RE2 syntax, shared by CEL and TypeScript. */
export const scheduleRegex = `^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [0-9]+(s|m|h|d)|${field}( +${field}){4})$`;

// maxLength bounds the CEL rule's estimated cost (the apiserver refuses a CRD whose rule may cost too much on an unbounded string).
export const scheduleSchema = withRules(z.string().max(128), [{
  rule: `size(self) > 0 && self.matches('${scheduleRegex}')`,
  message: 'schedule must be a 5-field cron expression (e.g. "0 9 * * 1-5") or a macro (@hourly, @daily, @weekly, @monthly, @yearly, @every 30m)',
  check: (s) => s.length > 0 && new RegExp(scheduleRegex).test(s),
}]);

/** Most runs of each kind a CronJob keeps in its history. */
export const historyLimitMax = 1_000;

export const cronJobSpecSchema = withoutNul(z.object({
  agentRef: localObjectRefSchema.describe('The Agent (same namespace) that runs the prompt.'),
  schedule: doc(scheduleSchema, '5-field cron expression ("0 9 * * 1-5") or a macro (@daily, @every 30m).'),
  timeZone: z.string().max(64).default('UTC').describe('IANA time zone the schedule is read in (e.g. Europe/Paris).'),
  prompt: z.string().min(1).max(specLimits.prompt).refine((p) => !p.includes('\u0000'), 'must not contain NUL (U+0000) characters').describe('What the agent is asked on each run (a fresh session each time).'),
  skills: z.array(z.string().max(specLimits.token)).max(64).default([]).describe('Skills loaded into the run, in order.'),
  deliver: z.string().max(specLimits.principal).optional().describe('Where results go: local, a platform (home channel) or platform:target[:thread], e.g. slack:#eng.'),
  concurrencyPolicy: z.enum(['Forbid', 'Allow', 'Replace']).default('Forbid').describe('What happens when a run is due while the previous one still runs.'),
  catchUpMissed: z.boolean().default(false).describe('Run slots missed while Hermes was down (false: skip them and record why).'),
  startingDeadlineSeconds: z.number().int().positive().max(specLimits.cronDeadlineSeconds).optional().describe(`A run that cannot start within this many seconds of its slot is skipped (at most ${specLimits.cronDeadlineSeconds}: the scheduler looks back 7 days).`),
  suspend: z.boolean().default(false).describe('Stop scheduling new runs (slots while suspended are not owed: resuming starts at the next slot).'),
  // Bounded: the scheduler's pruning reads them as a Postgres integer, and a limit past it (3000000000) failed every tick's pruning.
  successfulRunsHistoryLimit: z.number().int().min(0).max(historyLimitMax).default(3).describe(`Completed runs kept in the history (Postgres cron_runs; at most ${historyLimitMax}).`),
  failedRunsHistoryLimit: z.number().int().min(0).max(historyLimitMax).default(1).describe(`Failed, interrupted, discarded and skipped runs kept in the history (at most ${historyLimitMax}).`),
}));

/** Set this annotation to a new value (e.g. a timestamp) to ask for one run now. */
export const runNowAnnotation = 'hermes.dev/run-now';

export const cronJobStatusSchema = z.object({
  ...baseStatusShape,
  lastScheduleTime: z.string().optional().describe('When the job last fired (from Postgres).'),
  nextScheduleTime: z.string().optional().describe('When the job fires next (from Postgres).'),
  lastRunStatus: z.string().optional().describe('Outcome of the last run.'),
  lastSuccessfulTime: z.string().optional().describe('When the last completed run finished (from Postgres).'),
  active: z.array(z.object({
    scheduledTime: z.string().describe('The slot the run is for.'),
    admission: z.string().describe('The run\'s admission id (GET /v1/admissions/<id>, hermes cron history).'),
  })).optional().describe('Runs not ended yet.'),
});

export const cronJobSchema = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('CronJob'),
  metadata: objectMetaSchema,
  spec: cronJobSpecSchema,
  status: cronJobStatusSchema.optional(),
});
export type CronJob = z.infer<typeof cronJobSchema>;
