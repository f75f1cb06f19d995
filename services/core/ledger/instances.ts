// Worker instances: every process that owns work registers itself and heartbeats. Ownership is
// always (instance id, start time / epoch), never a PID.
//
// When is an owner dead? When its row says it stopped, or when its heartbeat is older than the
// instance TTL — but only in the eyes of a *steady judge*: a process whose own heartbeats have
// succeeded for at least one whole TTL. After a Postgres restart or failover every heartbeat is
// stale at once; judges that just got their connection back are not steady yet, so nobody declares
// a live worker dead before it had the chance to heartbeat again. The owner, for its part, fences
// itself (stops its turns) before its heartbeat can look stale to anyone (worker/liveness.ts).
import { hostname } from 'node:os';
import type { Sql } from '../db.js';

export type InstanceKind = 'gateway' | 'worker' | 'operator' | 'dev';

export interface Instance {
  id: string;
  kind: InstanceKind;
  startedAt: Date;
}

/** How the caller may judge other owners: their TTL, and whether the caller is a steady judge. */
export interface DeathRule {
  instanceTtlSeconds: number;
  /** False right after our own connection to Postgres was interrupted: then only stopped owners count as dead. */
  steady: boolean;
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

/**
 * SQL predicate: the owner in column `col` is dead under the rule in parameters `ttl` (seconds)
 * and `steady` (boolean) — no row, stopped, or (steady judge only) heartbeat older than the TTL.
 * The definition is the SQL function hermes_owner_dead (migration hot_path_functions).
 */
export const ownerDead = (col: string, ttl: string, steady: string) => `hermes_owner_dead(${col}, ${ttl}::float8, ${steady}::boolean)`;
