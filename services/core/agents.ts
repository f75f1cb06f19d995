// Compiled agent revisions in Postgres: written by the compile step (operator or `hermes dev`),
// announced with NOTIFY so running gateways and workers switch without a restart.
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Db, Sql } from './db.js';
import { compiledAgentSchema, type CompiledAgent } from './compiled.js';

export const configChannel = 'hermes_config';

export interface AgentRecord {
  agentId: string;
  revisionId: string;
  hash: string;
  compiled: CompiledAgent;
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

/** Stores `compiled` as the agent's current revision (idempotent); NOTIFY when it changed. */
export async function publishRevision(db: Db, compiled: CompiledAgent): Promise<{ agentId: string; revisionId: string; changed: boolean }> {
  const valid = compiledAgentSchema.parse(compiled);
  const hash = sha256(canonicalJson(valid));
  return db.tx(async (sql) => {
    const { rows: [agent] } = await sql.query<{ id: string; current_revision_id: string | null }>(
      `INSERT INTO agents (id, namespace, name, updated_at) VALUES (gen_random_uuid(), $1, $2, now())
       ON CONFLICT (namespace, name) DO UPDATE SET namespace = EXCLUDED.namespace RETURNING id, current_revision_id`,
      [valid.agent.namespace, valid.agent.name],
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

const selectAgent = `SELECT a.id AS "agentId", r.id AS "revisionId", r.hash, r.compiled
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

/**
 * A read-through cache of current revisions, invalidated by NOTIFY on `hermes_config`. A lost
 * listener connection clears the cache and reconnects, so a missed NOTIFY never serves stale
 * config for long.
 */
export class AgentCache {
  private byName = new Map<string, Promise<AgentRecord | undefined>>();
  private byId = new Map<string, Promise<AgentRecord | undefined>>();
  private listener: pg.Client | undefined;
  private closed = false;

  constructor(private readonly db: Db, private readonly databaseUrl: string) {}

  async start(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: 'hermes-config-listener' });
    client.on('notification', () => this.clear());
    client.on('error', () => this.reconnect(client));
    client.on('end', () => this.reconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${configChannel}`);
      this.listener = client;
    } catch {
      this.reconnect(client);
    }
  }

  private reconnect(client: pg.Client): void {
    this.clear();
    if (this.listener === client) this.listener = undefined;
    if (!this.closed) setTimeout(() => void this.start(), 1_000).unref();
  }

  clear(): void {
    this.byName.clear();
    this.byId.clear();
  }

  get(namespace: string, name: string): Promise<AgentRecord | undefined> {
    const key = `${namespace}/${name}`;
    let hit = this.byName.get(key);
    if (!hit) {
      hit = findAgent(this.db.pool, namespace, name).catch((err) => { this.byName.delete(key); throw err; });
      this.byName.set(key, hit);
    }
    return hit;
  }

  getById(agentId: string): Promise<AgentRecord | undefined> {
    let hit = this.byId.get(agentId);
    if (!hit) {
      hit = findAgentById(this.db.pool, agentId).catch((err) => { this.byId.delete(agentId); throw err; });
      this.byId.set(agentId, hit);
    }
    return hit;
  }

  async close(): Promise<void> {
    this.closed = true;
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => undefined);
  }
}
