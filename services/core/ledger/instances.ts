// Worker instances: every process that owns work registers itself and heartbeats. Ownership is
// always (instance id, start time / epoch), never a PID; a silent instance is dead after a TTL.
import { hostname } from 'node:os';
import type { Sql } from '../db.js';

export type InstanceKind = 'gateway' | 'worker' | 'operator' | 'dev';

export interface Instance {
  id: string;
  kind: InstanceKind;
  startedAt: Date;
}

export async function registerInstance(sql: Sql, kind: InstanceKind): Promise<Instance> {
  const { rows } = await sql.query<{ id: string; started_at: Date }>(
    `INSERT INTO worker_instances (id, kind, hostname, pid) VALUES (gen_random_uuid(), $1, $2, $3) RETURNING id, started_at`,
    [kind, hostname(), process.pid],
  );
  const row = rows[0]!;
  return { id: row.id, kind, startedAt: row.started_at };
}

/** Returns false when the row is gone or marked stopped (this process must stop taking work). */
export async function heartbeat(sql: Sql, instanceId: string): Promise<boolean> {
  const { rowCount } = await sql.query(`UPDATE worker_instances SET heartbeat_at = now() WHERE id = $1 AND stopped_at IS NULL`, [instanceId]);
  return rowCount === 1;
}

export async function markStopped(sql: Sql, instanceId: string): Promise<void> {
  await sql.query(`UPDATE worker_instances SET stopped_at = now() WHERE id = $1`, [instanceId]);
}

/** SQL predicate: instance `$col` is alive (heartbeat within `$ttl` seconds, not stopped). */
export const instanceAlive = (col: string, ttlParam: string) =>
  `EXISTS (SELECT 1 FROM worker_instances wi WHERE wi.id = ${col} AND wi.stopped_at IS NULL AND wi.heartbeat_at > now() - make_interval(secs => ${ttlParam}))`;
