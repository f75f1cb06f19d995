// Compiled CronJobs in Postgres (cron_schedules). The operator owns the definition; the scheduler
// owns next_run_at/last_run_at once running, so an unchanged definition never moves next_run_at.
import { canonicalJson, sha256, type Db, type Publisher } from '../../services/core/index.js';
import type { CronJob } from '../api/cronjob.js';

export interface ScheduleRow { nextRunAt: Date | null; lastRunAt: Date | null; lastStatus: string | null; hash: string }

export const cronHash = (spec: CronJob['spec']): string => sha256(canonicalJson(spec));

export async function findSchedule(db: Db, namespace: string, name: string): Promise<ScheduleRow | undefined> {
  const { rows } = await db.pool.query<ScheduleRow>(
    `SELECT next_run_at AS "nextRunAt", last_run_at AS "lastRunAt", last_status AS "lastStatus", hash FROM cron_schedules WHERE namespace = $1 AND name = $2`, [namespace, name]);
  return rows[0];
}

/** Writes the definition (a changed one restarts the schedule at `nextRunAt`); returns the stored row. */
export async function upsertSchedule(db: Db, job: CronJob, nextRunAt: Date): Promise<ScheduleRow> {
  const s = job.spec;
  const { rows } = await db.pool.query<ScheduleRow>(
    `INSERT INTO cron_schedules (id, namespace, name, agent_name, schedule, time_zone, spec, hash, suspend, next_run_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (namespace, name) DO UPDATE SET agent_name = EXCLUDED.agent_name, schedule = EXCLUDED.schedule, time_zone = EXCLUDED.time_zone,
       spec = EXCLUDED.spec, hash = EXCLUDED.hash, suspend = EXCLUDED.suspend, next_run_at = EXCLUDED.next_run_at, updated_at = now()
     RETURNING next_run_at AS "nextRunAt", last_run_at AS "lastRunAt", last_status AS "lastStatus", hash`,
    [job.metadata.namespace, job.metadata.name, s.agentRef.name, s.schedule, s.timeZone, JSON.stringify(s), cronHash(s), s.suspend, nextRunAt]);
  return rows[0]!;
}

export async function deleteSchedule(db: Db, namespace: string, name: string): Promise<number> {
  const { rowCount } = await db.pool.query('DELETE FROM cron_schedules WHERE namespace = $1 AND name = $2', [namespace, name]);
  return rowCount ?? 0;
}

/**
 * Deletes the schedules (and their run history) of the agents `publisher` published, except the
 * CronJobs in `keep` (`namespace/name`); returns the keys deleted. A schedule of an agent someone
 * else published, or of no agent yet, is left alone.
 */
export async function deleteSchedulesExcept(db: Db, publisher: Publisher, keep: readonly string[]): Promise<string[]> {
  const { rows } = await db.pool.query<{ key: string }>(
    `DELETE FROM cron_schedules c USING agents a
     WHERE a.namespace = c.namespace AND a.name = c.agent_name AND a.published_by = $1 AND NOT (c.namespace || '/' || c.name = ANY($2::text[]))
     RETURNING c.namespace || '/' || c.name AS key`,
    [publisher, keep],
  );
  return rows.map((r) => r.key).sort();
}
