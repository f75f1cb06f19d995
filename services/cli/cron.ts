// `hermes cron list | run | history`: the CronJobs as Postgres holds them (compiled by the operator
// or `hermes dev`), "run now", and each CronJob's run history (slot, start, end, outcome, reply
// delivery, tokens and cost). Straight to Postgres, like `hermes agents`: no operator or kubectl
// needed. `run` asks the scheduler (one active in the workers) to fire a manual run at its next
// tick — within HERMES_CRON_TICK_SECONDS; the hermes.dev/run-now annotation does the same.
import { Command } from 'commander';
import { cronHistory, listCronSchedules, requestRunNow, type CronRunView } from '../core/index.js';
import { splitRef, UsageError, withDb } from './cli-db.js';

/** `NAMESPACE/NAME`, or `NAME` in --namespace. */
function cronRef(ref: string, namespace: string): [string, string] {
  const split = splitRef(ref, namespace);
  if (!split) throw new UsageError(`name the CronJob as NAMESPACE/NAME or NAME (got "${ref}")`);
  return split;
}

const iso = (d: Date | null) => (d ? d.toISOString().replace(/\.\d{3}Z$/, 'Z') : '-');

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

const outcomeOf = (r: CronRunView) => (r.state === 'skipped' ? `skipped (${r.reason ?? '?'})` : (r.outcome ?? r.state) + (r.reason ? ` (${r.reason})` : ''));
const tokensOf = (r: CronRunView) => (r.inputTokens === null ? '-' : `${r.inputTokens}/${r.outputTokens ?? 0}`);

export const cronCommand = new Command('cron').description('CronJobs: list them, run one now, show its run history.');

cronCommand.command('list').description('The CronJobs in Postgres with their next and last run.')
  .action(() => withDb(async (db) => {
    const rows = await listCronSchedules(db.pool);
    if (rows.length === 0) return void console.log('No CronJobs.');
    console.log(table([['CRONJOB', 'SCHEDULE', 'TIMEZONE', 'SUSPEND', 'LAST', 'NEXT', 'LAST OUTCOME'],
      ...rows.map((r) => [`${r.namespace}/${r.name}`, r.schedule, r.timeZone, String(r.suspend), iso(r.lastRunAt), r.suspend ? '-' : iso(r.nextRunAt), r.lastStatus ?? '-'])]));
  }));

cronCommand.command('run').description('Run a CronJob now (a manual run, whatever its schedule, suspension or concurrency policy); the scheduler starts it at its next tick.')
  .argument('<cronjob>', 'NAMESPACE/NAME (or NAME with --namespace)')
  .option('-n, --namespace <namespace>', 'namespace of NAME', 'default')
  .action((ref: string, opts: { namespace: string }) => withDb(async (db) => {
    const [ns, name] = cronRef(ref, opts.namespace);
    if ((await requestRunNow(db, ns, name)) === 'no-cronjob') throw new UsageError(`no CronJob ${ns}/${name} in this database (see hermes cron list)`);
    console.log(`Asked for a run of ${ns}/${name} now; the scheduler starts it within a tick. Follow it with: hermes cron history ${ns}/${name}`);
  }));

cronCommand.command('history').description('A CronJob\'s runs, newest first: slot, start, end, outcome (or why a slot was skipped), reply delivery, tokens in/out, cost.')
  .argument('<cronjob>', 'NAMESPACE/NAME (or NAME with --namespace)')
  .option('-n, --namespace <namespace>', 'namespace of NAME', 'default')
  .option('-l, --limit <n>', 'at most this many runs', '20')
  .option('--json', 'print JSON lines instead of a table')
  .action((ref: string, opts: { namespace: string; limit: string; json?: boolean }) => withDb(async (db) => {
    const [ns, name] = cronRef(ref, opts.namespace);
    const limit = Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit must be a positive whole number (got "${opts.limit}")`);
    const runs = await cronHistory(db.pool, ns, name, limit);
    if (!runs) throw new UsageError(`no CronJob ${ns}/${name} in this database (see hermes cron list)`);
    if (opts.json) return void runs.forEach((r) => console.log(JSON.stringify(r)));
    if (runs.length === 0) return void console.log(`No runs of ${ns}/${name} yet.`);
    console.log(table([['SLOT', 'TRIGGER', 'STARTED', 'FINISHED', 'OUTCOME', 'DELIVERY', 'TOKENS', 'COST', 'ADMISSION'],
      ...runs.map((r) => [iso(r.slot), r.trigger, iso(r.startedAt), iso(r.finishedAt), outcomeOf(r), r.deliveryState ?? '-', tokensOf(r), r.costUsd ?? '-', r.admissionId ?? '-'])]));
  }));
