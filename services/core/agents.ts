// Compiled agent revisions in Postgres: written by the compile step (operator or `hermes dev`),
// announced with NOTIFY so running gateways and workers switch without a restart.
import { createHash } from 'node:crypto';
import type { Db, Sql } from './db.js';
import { compiledAgentSchema, type CompiledAgent } from './compiled.js';
import { ConfigListener, type ListenerTuning } from './config-listener.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';

export const configChannel = 'hermes_config';

export interface AgentRecord {
  agentId: string;
  revisionId: string;
  hash: string;
  compiled: CompiledAgent;
  /** Emergency stop by `hermes agents stop` (null when not stopped); see agentStopped(). */
  stoppedAt: Date | null;
  stoppedReason: string | null;
}

/**
 * Why the agent is stopped (emergency stop), or undefined when it runs: the Agent's own
 * `spec.stopped`, or `hermes agents stop` (agents.stopped_at, which needs no operator).
 */
export function agentStopped(record: Pick<AgentRecord, 'compiled' | 'stoppedAt' | 'stoppedReason'>): string | undefined {
  if (record.stoppedAt) return record.stoppedReason?.trim() || 'stopped with hermes agents stop';
  if (record.compiled.stopped) return 'spec.stopped is true';
  return undefined;
}

/** The reply to every message while the agent is stopped (no model call). */
export const stoppedReply = 'This agent has been stopped by its operator (emergency stop), so it is not answering messages now. Please try again later.';

/** Why a running turn was cut by the emergency stop (its interrupted reply names it). */
export const emergencyStopReason = 'stopped by the operator (emergency stop)';

/** Sets or clears the emergency stop of `agentId` and tells every gateway and worker (NOTIFY): how many of its turns were running then, or false when there is no such agent. */
export async function setAgentStopped(db: Db, agentId: string, stop: { reason: string } | false): Promise<{ running: number } | false> {
  return db.tx(async (sql) => {
    const { rowCount } = await sql.query(
      `UPDATE agents SET stopped_at = CASE WHEN $2 THEN now() END, stopped_reason = $3, updated_at = now() WHERE id = $1`,
      [agentId, stop !== false, stop === false ? null : stop.reason],
    );
    if (!rowCount) return false;
    // Counted before the commit delivers the NOTIFY: a worker may stop a turn right after it.
    const { rows: [counted] } = await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM admissions WHERE agent_id = $1 AND state = 'started'`, [agentId]);
    await sql.query(`SELECT pg_notify($1, $2)`, [configChannel, agentId]);
    return { running: counted?.n ?? 0 };
  });
}

/** Canonical JSON (sorted keys) so equal configs hash equal. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Who publishes revisions: the operator from Agent resources, `hermes dev` from a folder of manifests. */
export type Publisher = 'operator' | 'hermes-dev';

/** Stores `compiled` as the agent's current revision (idempotent); NOTIFY when it changed. */
export async function publishRevision(db: Db, compiled: CompiledAgent, publisher: Publisher = 'operator'): Promise<{ agentId: string; revisionId: string; changed: boolean }> {
  const valid = compiledAgentSchema.parse(compiled);
  const hash = sha256(canonicalJson(valid));
  return db.tx(async (sql) => {
    const { rows: [agent] } = await sql.query<{ id: string; current_revision_id: string | null }>(
      `INSERT INTO agents (id, namespace, name, published_by, updated_at) VALUES (gen_random_uuid(), $1, $2, $3, now())
       ON CONFLICT (namespace, name) DO UPDATE SET published_by = EXCLUDED.published_by RETURNING id, current_revision_id`,
      [valid.agent.namespace, valid.agent.name, publisher],
    );
    const { rows: [rev] } = await sql.query<{ id: string }>(
      `WITH ins AS (INSERT INTO config_revisions (id, agent_id, hash, compiled) VALUES (gen_random_uuid(), $1, $2, $3)
                    ON CONFLICT (agent_id, hash) DO NOTHING RETURNING id)
       SELECT id FROM ins UNION ALL SELECT id FROM config_revisions WHERE agent_id = $1 AND hash = $2 LIMIT 1`,
      [agent!.id, hash, JSON.stringify(valid)],
    );
    const changed = agent!.current_revision_id !== rev!.id;
    if (changed) {
      await sql.query(`UPDATE agents SET current_revision_id = $2, updated_at = now() WHERE id = $1`, [agent!.id, rev!.id]);
      await sql.query(`SELECT pg_notify($1, $2)`, [configChannel, agent!.id]);
    }
    return { agentId: agent!.id, revisionId: rev!.id, changed };
  });
}

/**
 * Turns off the agents `publisher` published that are not in `keep` (`namespace/name`): no
 * revision is live, so gateways and workers stop serving them (NOTIFY), while their sessions,
 * memory and history stay for the day a revision is published again. Returns the keys turned off.
 */
export async function unpublishAgentsExcept(db: Db, publisher: Publisher, keep: readonly string[]): Promise<string[]> {
  const { rows } = await db.pool.query<{ key: string }>(
    `WITH off AS (
       UPDATE agents SET current_revision_id = NULL, updated_at = now()
       WHERE published_by = $1 AND current_revision_id IS NOT NULL AND NOT (namespace || '/' || name = ANY($2::text[]))
       RETURNING id, namespace || '/' || name AS key)
     SELECT key, pg_notify($3, id::text) FROM off ORDER BY key`,
    [publisher, keep, configChannel],
  );
  return rows.map((r) => r.key);
}

/**
 * Deletes an agent and every row that belongs to it (sessions, memory, history: the foreign keys
 * cascade) and tells every gateway and worker (NOTIFY), so none keeps serving it from its cache.
 * Returns whether there was such an agent.
 */
export async function deleteAgent(db: Db, namespace: string, name: string): Promise<boolean> {
  const { rowCount } = await db.pool.query(
    `WITH gone AS (DELETE FROM agents WHERE namespace = $1 AND name = $2 RETURNING id)
     SELECT pg_notify($3, id::text) FROM gone`,
    [namespace, name, configChannel],
  );
  return (rowCount ?? 0) > 0;
}

const selectAgent = `SELECT a.id AS "agentId", r.id AS "revisionId", r.hash, r.compiled, a.stopped_at AS "stoppedAt", a.stopped_reason AS "stoppedReason"
  FROM agents a JOIN config_revisions r ON r.id = a.current_revision_id`;

export async function findAgent(sql: Sql, namespace: string, name: string): Promise<AgentRecord | undefined> {
  const { rows } = await sql.query<AgentRecord>(`${selectAgent} WHERE a.namespace = $1 AND a.name = $2`, [namespace, name]);
  return rows[0];
}

export async function findAgentById(sql: Sql, agentId: string): Promise<AgentRecord | undefined> {
  const { rows } = await sql.query<AgentRecord>(`${selectAgent} WHERE a.id = $1`, [agentId]);
  return rows[0];
}

export async function listAgents(sql: Sql): Promise<AgentRecord[]> {
  const { rows } = await sql.query<AgentRecord>(`${selectAgent} ORDER BY a.namespace, a.name`);
  return rows;
}

/** Which enabled agents (`namespace/name`) accept each API key hash. */
async function loadKeyIndex(sql: Sql): Promise<Map<string, Set<string>>> {
  const { rows } = await sql.query<{ agent: string; hash: string }>(
    `SELECT a.namespace || '/' || a.name AS agent, k.hash
     FROM agents a JOIN config_revisions r ON r.id = a.current_revision_id
     CROSS JOIN LATERAL jsonb_array_elements_text(COALESCE(r.compiled->'api'->'keySha256', '[]'::jsonb)) AS k(hash)
     WHERE (r.compiled->'api'->>'enabled')::boolean`,
  );
  const index = new Map<string, Set<string>>();
  for (const { agent, hash } of rows) {
    let agents = index.get(hash);
    if (!agents) index.set(hash, (agents = new Set()));
    agents.add(agent);
  }
  return index;
}

export interface AgentCacheOptions {
  log?: Logger;
  /** Counts listener reconnects (hermes_config_listener_reconnects_total). */
  metrics?: Pick<Metrics, 'configListenerReconnects'>;
  /** Reconnect backoff, ping and timers of the config listener (tests inject timers). */
  listener?: Partial<ListenerTuning>;
}

export interface AgentCacheSize {
  names: number;
  ids: number;
  /** Distinct key hashes in the key index (0 until it is first needed). */
  keys: number;
}

/**
 * A read-through cache of current revisions, invalidated by NOTIFY on `hermes_config` (one
 * listener connection, see config-listener.ts). It is emptied when the listener loses its
 * connection and again once it is back, so a NOTIFY missed meanwhile never leaves stale config.
 *
 * Only what exists is cached: a lookup that finds no agent is forgotten at once, so the cache is
 * bounded by the real agents whatever names callers send. Callers that authenticate first ask
 * `agentsForKey` (an index of key hash → agents, bounded by the real keys) and look a name up
 * only when the key is one of that agent's.
 */
export class AgentCache {
  private byName = new Map<string, Promise<AgentRecord | undefined>>();
  private byId = new Map<string, Promise<AgentRecord | undefined>>();
  private keyIndex: Promise<Map<string, Set<string>>> | undefined;
  private keyCount = 0;
  private readonly listener: ConfigListener;
  private readonly changeListeners = new Set<(agentId: string | undefined) => void>();

  constructor(private readonly db: Db, databaseUrl: string, opts: AgentCacheOptions = {}) {
    this.listener = new ConfigListener({
      databaseUrl,
      channel: configChannel,
      applicationName: 'hermes-config-listener',
      onNotify: (agentId) => { this.clear(); this.changed(agentId); },
      onResync: () => { this.clear(); this.changed(undefined); },
      onReconnected: () => opts.metrics?.configListenerReconnects.inc(),
      ...(opts.log ? { log: opts.log } : {}),
      ...(opts.listener ? { tuning: opts.listener } : {}),
    });
  }

  /** Opens the listener connection (retrying in the background when Postgres is down). */
  start(): Promise<void> {
    return this.listener.start();
  }

  /** True while the config listener has LISTEN in place. */
  get listening(): boolean {
    return this.listener.listening;
  }

  clear(): void {
    this.byName.clear();
    this.byId.clear();
    this.keyIndex = undefined;
    this.keyCount = 0;
  }

  /**
   * Calls `fn` after a change is announced: with the agent's id, or undefined when any agent may
   * have changed (the listener reconnected). Returns the unsubscribe function.
   */
  onChange(fn: (agentId: string | undefined) => void): () => void {
    this.changeListeners.add(fn);
    return () => this.changeListeners.delete(fn);
  }

  private changed(agentId: string | undefined): void {
    for (const fn of this.changeListeners) {
      try { fn(agentId); } catch { /* a listener's failure is its own */ }
    }
  }

  /** Entries held, for tests and metrics. */
  get size(): AgentCacheSize {
    return { names: this.byName.size, ids: this.byId.size, keys: this.keyCount };
  }

  /** Looks `key` up through `map`, keeping the answer only when an agent was found. */
  private cached(map: Map<string, Promise<AgentRecord | undefined>>, key: string, load: () => Promise<AgentRecord | undefined>): Promise<AgentRecord | undefined> {
    const hit = map.get(key);
    if (hit) return hit;
    const loading = load().then(
      (found) => { if (!found && map.get(key) === loading) map.delete(key); return found; },
      (err: unknown) => { if (map.get(key) === loading) map.delete(key); throw err; },
    );
    map.set(key, loading);
    return loading;
  }

  get(namespace: string, name: string): Promise<AgentRecord | undefined> {
    return this.cached(this.byName, JSON.stringify([namespace, name]), () => findAgent(this.db.pool, namespace, name));
  }

  getById(agentId: string): Promise<AgentRecord | undefined> {
    return this.cached(this.byId, agentId, () => findAgentById(this.db.pool, agentId));
  }

  /** The agents (`namespace/name`) with the API platform enabled that accept the key with this sha256. */
  async agentsForKey(keyHash: string): Promise<ReadonlySet<string>> {
    let index = this.keyIndex;
    if (!index) {
      const loading = loadKeyIndex(this.db.pool);
      this.keyIndex = index = loading;
      loading.then(
        (loaded) => { if (this.keyIndex === loading) this.keyCount = loaded.size; },
        () => { if (this.keyIndex === loading) this.keyIndex = undefined; },
      );
    }
    return (await index).get(keyHash) ?? new Set();
  }

  async close(): Promise<void> {
    await this.listener.stop();
  }
}
