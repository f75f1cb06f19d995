// The system as deployed, for one scenario: a fresh database, `hermes gateway` and `hermes worker`
// processes in numbered slots (a slot keeps its port; a killed process is respawned into it), the
// slow model, and an audit connection of our own. Timers are short (heartbeat 1 s, instance TTL
// 3 s) so that death is judged in seconds; the lease TTL (60 s) stays longer than the longest
// outage, as in production (300 s), so an outage keeps the answers a lease still covers.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { request } from 'undici';
import { openDb, publishRevision, sha256 } from '../../services/core/index.js';
import { freePort } from '../support/ports.js';
import { createTestDatabase, type TestDatabase } from '../support/services.js';
import { testAgent } from '../support/system.js';
import type { ChaosModel } from './model.js';
import { ProcessGroup, type Proc } from './processes.js';
import { pause } from './random.js';

export const chaosApiKey = 'chaos-key-0123456789abcdef';

/** Timers of every process (strings: they are environment variables). */
export const chaosTimers: Record<string, string> = {
  HERMES_HEARTBEAT_SECONDS: '1',
  HERMES_INSTANCE_TTL_SECONDS: '3',
  HERMES_LEASE_TTL_SECONDS: '60',
  HERMES_LEASE_RENEW_SECONDS: '2',
  HERMES_SWEEP_SECONDS: '1',
  HERMES_SWEEP_GRACE_SECONDS: '1',
  HERMES_DB_QUERY_TIMEOUT_SECONDS: '5',
  HERMES_REDIS_TIMEOUT_SECONDS: '3',
  HERMES_SHUTDOWN_GRACE_SECONDS: '3',
};

export type ScenarioDatabase = TestDatabase;

/** A new database on the server of `serverUrl` (any database URL on it), migrated unless told not to. */
export async function createDatabase(serverUrl: string, opts: { migrate?: boolean } = {}): Promise<ScenarioDatabase> {
  const db = await createTestDatabase({ ...opts, serverUrl, prefix: 'hermes_chaos' });
  // Dropped in a `finally`: a failure there must not hide the scenario's own outcome.
  return { ...db, drop: () => db.drop().catch(() => undefined) };
}

export interface Slot {
  role: 'gateway' | 'worker';
  index: number;
  /** Gateway: HERMES_PORT; worker: HERMES_WORKER_PORT (probes). */
  port: number;
  url: string;
  proc?: Proc;
  /** The DATABASE_URL this slot's processes use (a proxy for some). */
  databaseUrl: string;
}

export interface ClusterOptions {
  database: ScenarioDatabase;
  redisUrl: string;
  model: ChaosModel;
  group: ProcessGroup;
  gateways: number;
  workers: number;
  /** DATABASE_URL of worker slot `i`, given the database's (default: that one). */
  workerDatabaseUrl?: (i: number, databaseUrl: string) => string;
  env?: Record<string, string>;
}

/** Polls `check` until truthy or `timeoutMs` passes (then undefined). */
export async function within<T>(timeoutMs: number, check: () => Promise<T | undefined | false> | T | undefined | false, everyMs = 100): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await Promise.resolve().then(check).catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) return undefined;
    await pause(everyMs);
  }
}

/** GET `url` → status, or 0 when nothing answered within `timeoutMs`. */
export async function statusOf(url: string, timeoutMs = 2_000): Promise<number> {
  try {
    const res = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    await res.body.dump();
    return res.statusCode;
  } catch {
    return 0;
  }
}

export class Cluster {
  readonly gateways: Slot[] = [];
  readonly workers: Slot[] = [];
  /** Our own connection for audits (never through a fault proxy). */
  readonly pool: pg.Pool;
  readonly prefix = `chaos-${randomUUID()}`;

  private constructor(readonly opts: ClusterOptions) {
    this.pool = new pg.Pool({ connectionString: opts.database.url, max: 4 });
    this.pool.on('error', () => undefined);
  }

  /** Slots and the audit connection; nothing started, nothing written. */
  static async create(opts: ClusterOptions): Promise<Cluster> {
    const c = new Cluster(opts);
    for (let i = 0; i < opts.gateways; i++) c.gateways.push(await c.slot('gateway', i, opts.database.url));
    for (let i = 0; i < opts.workers; i++) c.workers.push(await c.slot('worker', i, opts.workerDatabaseUrl?.(i, opts.database.url) ?? opts.database.url));
    return c;
  }

  /** The agent every scenario talks to, `default/demo`, on the API platform with {@link chaosApiKey}. */
  async publishAgent(): Promise<void> {
    const db = openDb(this.opts.database.url);
    try {
      // No baseURL: each worker calls the model at its own OPENAI_BASE_URL (…/w<gen>/v1).
      await publishRevision(db, {
        ...testAgent('http://unused.invalid/v1'),
        model: { provider: 'openai', model: 'gpt-test', apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' } },
        api: { enabled: true, keySha256: [sha256(chaosApiKey)] },
      });
    } finally {
      await db.close();
    }
  }

  /** Publishes the agent, starts every slot and waits until all are ready. */
  static async start(opts: ClusterOptions): Promise<Cluster> {
    const c = await Cluster.create(opts);
    try {
      await c.publishAgent();
      for (const s of c.slots()) c.spawn(s);
      await c.ready();
    } catch (err) {
      await c.close();
      throw err;
    }
    return c;
  }

  slots(): Slot[] {
    return [...this.gateways, ...this.workers];
  }

  private async slot(role: Slot['role'], index: number, databaseUrl: string): Promise<Slot> {
    const port = await freePort();
    return { role, index, port, url: `http://127.0.0.1:${port}`, databaseUrl };
  }

  /** The environment every process of this cluster shares. */
  baseEnv(databaseUrl = this.opts.database.url): Record<string, string> {
    return {
      DATABASE_URL: databaseUrl, REDIS_URL: this.opts.redisUrl, HERMES_QUEUE_PREFIX: this.prefix, HERMES_HOST: '127.0.0.1',
      HERMES_LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn', OPENAI_API_KEY: 'sk-chaos', HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY',
      ...chaosTimers, ...this.opts.env,
    };
  }

  /** Starts the slot's process (a new generation). */
  spawn(slot: Slot): Proc {
    const env = this.baseEnv(slot.databaseUrl);
    slot.proc = slot.role === 'gateway'
      ? this.opts.group.spawn('gateway', { ...env, HERMES_PORT: String(slot.port), HERMES_WORKER_PORT: '0' })
      : this.opts.group.spawn('worker', (gen) => ({ ...env, HERMES_WORKER_PORT: String(slot.port), OPENAI_BASE_URL: this.opts.model.baseURLFor(gen) }));
    return slot.proc;
  }

  /** SIGKILLs the slot's process (waits for its exit) and, unless told not to, starts a new one at once. */
  async kill(slot: Slot, respawn = true): Promise<Proc | undefined> {
    const victim = slot.proc;
    if (victim) await this.opts.group.kill(victim, 'SIGKILL');
    if (respawn) this.spawn(slot);
    return victim;
  }

  /** Every slot's /readyz answers 200 (within `timeoutMs`); throws naming the slots that did not. */
  async ready(slots: Slot[] = this.slots(), timeoutMs = 90_000): Promise<void> {
    const late: string[] = [];
    await Promise.all(slots.map(async (s) => {
      const ok = await within(timeoutMs, async () => (await statusOf(`${s.url}/readyz`)) === 200, 200);
      if (!ok) late.push(`${s.role} ${s.index} (${s.proc?.name ?? 'not started'}${s.proc && !s.proc.alive ? ', exited' : ''})`);
    }));
    if (late.length) throw new Error(`not ready within ${timeoutMs} ms: ${late.join(', ')}`);
  }

  /** The instance id the process with `pid` registered (undefined when it never did). */
  async instanceOf(pid: number): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ id: string }>(`SELECT id FROM worker_instances WHERE pid = $1 ORDER BY started_at DESC LIMIT 1`, [pid]);
    return rows[0]?.id;
  }

  /**
   * Connections named `hermes-config-listener` on this cluster's database, leaving out those whose
   * client port is in `ghosts` (server-side ends of connections a fault proxy stranded: their
   * process let go of them long ago, but Postgres cannot know).
   */
  async listenerConnections(ghosts: readonly number[] = []): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'hermes-config-listener' AND datname = current_database()
         AND NOT (client_port = ANY($1::int[]))`, [ghosts]);
    return rows[0]!.n;
  }

  /** Every connection to this cluster's database but our own audit ones, for a failure report. */
  async connections(): Promise<string[]> {
    const { rows } = await this.pool.query<{ app: string; port: number | null; started: Date; state: string | null; wait: string | null; blockedBy: number[]; pid: number; query: string }>(
      `SELECT pid, application_name AS app, client_port AS port, backend_start AS started, state, wait_event_type || ':' || wait_event AS wait,
              pg_blocking_pids(pid) AS "blockedBy", left(query, 120) AS query
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY backend_start`);
    return rows.map((r) => `${r.pid} ${r.app || '(no name)'}:${r.port ?? 'socket'} ${r.state ?? ''} since ${r.started.toISOString().slice(11, 23)}`
      + (r.state === 'idle' ? '' : ` wait ${r.wait ?? '-'}${r.blockedBy.length ? ` blocked by ${r.blockedBy.join(',')}` : ''}: ${r.query}`));
  }

  liveProcesses(): number {
    return this.slots().filter((s) => s.proc?.alive).length;
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
