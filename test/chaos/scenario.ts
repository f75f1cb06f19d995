// What every scenario shares: its context (scale, seed, servers, logs), a cluster opened and
// always closed around its body, the probe that says "the system answers again", and the audit
// that turns a run into a table row.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { audit, readLedger, settled, type AuditOptions } from './audit.js';
import { Cluster, chaosApiKey, createDatabase, within, type ClusterOptions, type ScenarioDatabase } from './cluster.js';
import { Load, type LoadOptions } from './load.js';
import { startChaosModel, tokenOf, type ChaosModel } from './model.js';
import { ProcessGroup } from './processes.js';
import { serverUrls } from '../support/services.js';
import { rowFrom, type Row } from './report.js';

export interface Scale {
  /** Worker SIGKILLs (issue: 200). */
  workerKills: number;
  gatewayKills: number;
  /** Length of the Postgres outage (issue: 30 s). */
  outageSeconds: number;
  redisDownSeconds: number;
  /** How long the proxy holds a path half-open (a worker's to Postgres; every process's to Redis). */
  halfOpenSeconds: number;
  /** Processes started at once on a fresh database (issue: 20). */
  stampede: number;
  /** Fuzzed requests (issue: 10 000). */
  fuzzRequests: number;
  /** Concurrent sessions of the load. */
  sessions: number;
}

export const scales: Record<'full' | 'bounded', Scale> = {
  full: { workerKills: 200, gatewayKills: 10, outageSeconds: 30, redisDownSeconds: 5, halfOpenSeconds: 12, stampede: 20, fuzzRequests: 10_000, sessions: 8 },
  bounded: { workerKills: 9, gatewayKills: 3, outageSeconds: 5, redisDownSeconds: 2, halfOpenSeconds: 6, stampede: 6, fuzzRequests: 1_000, sessions: 4 },
};

export interface ScenarioContext {
  scale: Scale;
  seed: number;
  /** Names this run's tokens: `[a-z0-9]+`. */
  run: string;
  /** Each scenario logs its processes under `<logDir>/<scenario>/`. */
  logDir: string;
  /** The shared Postgres (any database URL on it) and Redis. */
  serverUrl: string;
  redisUrl: string;
  say(line: string): void;
}

export interface Scenario {
  /** Table name, e.g. "worker SIGKILL". */
  name: string;
  /** Short id for `--only`. */
  id: string;
  run(ctx: ScenarioContext): Promise<Row>;
}

export interface Opened {
  cluster: Cluster;
  model: ChaosModel;
  group: ProcessGroup;
  database: ScenarioDatabase;
}

export interface OpenOptions extends Partial<Omit<ClusterOptions, 'database' | 'model' | 'group'>> {
  /** Where to create the database (default: the shared server). */
  serverUrl?: string;
  holdMs?: [number, number];
  /** Don't start the processes (the scenario does). */
  noStart?: boolean;
  migrate?: boolean;
}

/** Runs `body` on a fresh cluster; every process, the model and the database are gone afterwards, whatever happened. */
export async function withCluster<T>(ctx: ScenarioContext, id: string, o: OpenOptions, body: (x: Opened) => Promise<T>): Promise<T> {
  const logDir = join(ctx.logDir, id);
  await mkdir(logDir, { recursive: true });
  const group = new ProcessGroup(logDir);
  const model = await startChaosModel({ holdMs: o.holdMs ?? [200, 1_500], seed: ctx.seed });
  const database = await createDatabase(o.serverUrl ?? ctx.serverUrl, { migrate: o.migrate ?? true });
  let cluster: Cluster | undefined;
  try {
    const opts: ClusterOptions = { database, model, group, redisUrl: o.redisUrl ?? ctx.redisUrl, gateways: o.gateways ?? 1, workers: o.workers ?? 2, ...(o.workerDatabaseUrl ? { workerDatabaseUrl: o.workerDatabaseUrl } : {}), ...(o.env ? { env: o.env } : {}) };
    cluster = o.noStart ? await Cluster.create(opts) : await Cluster.start(opts);
    return await body({ cluster, model, group, database });
  } finally {
    await group.close();
    await cluster?.close();
    await model.close();
    await database.drop();
  }
}

/** A context on the servers of DATABASE_URL / REDIS_URL, logging each process under `logDir`. */
export function chaosContext(scale: Scale, seed: number, logDir: string, say: (line: string) => void): ScenarioContext {
  const { databaseUrl, redisUrl } = serverUrls();
  return { scale, seed, run: seed.toString(36), logDir, serverUrl: databaseUrl, redisUrl, say };
}

/**
 * Starts the scenario's load: `ctx.scale.sessions` sessions on the message API of the first
 * gateway, an input every 20–300 ms; `o` changes any of that.
 */
export function startLoad(ctx: ScenarioContext, cluster: Cluster, o: Partial<LoadOptions> = {}): Load {
  const load = new Load({ run: ctx.run, gateways: () => [cluster.gateways[0]!.url], sessions: ctx.scale.sessions, paceMs: [20, 300], seed: ctx.seed, ...o });
  load.start();
  return load;
}

let probes = 0;

/** Posts `n` messages, each in a session of its own (they go to whichever workers take them); resolves once all are admitted. */
export async function nudge(ctx: ScenarioContext, gatewayUrl: string, n: number): Promise<void> {
  await Promise.all(Array.from({ length: n }, async () => {
    const token = tokenOf(ctx.run, `probe${++probes}`, 1);
    const headers = { authorization: `Bearer ${chaosApiKey}`, 'content-type': 'application/json', 'idempotency-key': token };
    await within(30_000, async () => {
      const res = await request(`${gatewayUrl}/v1/agents/default/demo/messages`, { method: 'POST', headers, body: JSON.stringify({ content: token, conversation: token }), headersTimeout: 5_000 });
      await res.body.dump();
      return res.statusCode < 300;
    }, 250);
  }));
}

/**
 * Posts one new message (its own session) and waits until its turn has answered, through the
 * gateway's own API. The moment it answered (performance.now), or undefined after `timeoutMs`.
 */
/** What the last probe that failed saw last (for the finding). */
let lastProbeFailure = '';

export async function probe(ctx: ScenarioContext, gatewayUrl: string, timeoutMs = 60_000): Promise<number | undefined> {
  const token = tokenOf(ctx.run, `probe${++probes}`, 1);
  const headers = { authorization: `Bearer ${chaosApiKey}`, 'content-type': 'application/json', 'idempotency-key': token };
  let last = 'nothing tried';
  const seen = async <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (err) {
      last = `${what}: ${(err as Error).message}`;
      return undefined;
    }
  };
  const id = await within(timeoutMs, () => seen('admit', async () => {
    const res = await request(`${gatewayUrl}/v1/agents/default/demo/messages`, { method: 'POST', headers, body: JSON.stringify({ content: token, conversation: token }), headersTimeout: 5_000 });
    const text = await res.body.text();
    if (res.statusCode >= 300) last = `admit: ${res.statusCode} ${text.slice(0, 200)}`;
    return res.statusCode < 300 ? (JSON.parse(text) as { admissionId?: string }).admissionId : undefined;
  }), 250);
  let followed = id;
  const answered = id && await within(timeoutMs, () => seen('poll', async () => {
    const res = await request(`${gatewayUrl}/v1/agents/default/demo/admissions/${followed}`, { headers, headersTimeout: 5_000 });
    const a = (await res.body.json()) as { state?: string; outcome?: string; continuedBy?: string | null };
    last = `admission ${followed} ${a.state ?? '?'}/${a.outcome ?? '-'}`;
    if (a.continuedBy) followed = a.continuedBy; // cut by a fence or shutdown: the resume answers
    return a.state === 'terminal' && a.outcome === 'completed' ? performance.now() : undefined;
  }), 100);
  if (!answered) lastProbeFailure = last;
  return answered || undefined;
}

export interface Finish {
  ctx: ScenarioContext;
  cluster: Cluster;
  load?: Load;
  model?: ChaosModel;
  /** performance.now() when the (last) fault ended. */
  faultEnd: number;
  audit?: Omit<AuditOptions, 'load' | 'model'>;
  /** More facts for `ledger.json` in the scenario's log folder. */
  dump?: Record<string, unknown>;
  /** The scenario's id (its log folder). */
  id: string;
  name: string;
  faults: string;
  startedAt: number;
}

/**
 * The end every scenario shares: all processes ready, a probe answered, the load stopped and
 * drained, every admission settled; then the audit. Recovery = fault end → probe answered and
 * everything settled.
 */
export async function finish(f: Finish): Promise<Row> {
  const { cluster } = f;
  let notReady: string | undefined;
  await cluster.ready().catch((err: unknown) => { notReady = (err as Error).message; });
  const answered = await probe(f.ctx, cluster.gateways[0]!.url);
  await f.load?.stop();
  const settledAt = await settled(cluster.pool, 120_000);
  const rows = await readLedger(cluster.pool);
  await writeFile(join(f.ctx.logDir, f.id, 'ledger.json'), JSON.stringify({ ...f.dump, faultEnd: f.faultEnd, answered, settledAt, rows, instances: (await cluster.pool.query('SELECT * FROM worker_instances ORDER BY started_at')).rows, calls: f.model?.calls.map((c) => ({ token: c.token, gen: c.gen, resume: c.resume, at: c.seen.receivedAt, end: c.seen.endedAt, aborted: c.seen.aborted })) }, null, 1));
  const result = audit(rows, { ...f.audit, ...(f.load ? { load: f.load } : {}), ...(f.model ? { model: f.model } : {}) });
  const row = rowFrom(f.name, f.faults, result, f.load?.statuses, { wallSeconds: (performance.now() - f.startedAt) / 1_000 });
  if (notReady) row.findings.push({ check: 'recovery', detail: notReady });
  if (answered === undefined) row.findings.push({ check: 'recovery', detail: `a new message was not answered within 60 s of the fault ending (${lastProbeFailure}); connections: ${(await cluster.connections()).join('; ')}` });
  if (settledAt === undefined) row.findings.push({ check: 'recovery', detail: 'admissions still queued or started 120 s after the load stopped' });
  if (answered !== undefined && settledAt !== undefined) row.recoverySeconds = (Math.max(answered, settledAt) - f.faultEnd) / 1_000;
  if (f.load?.statuses.unexpected5xx) row.findings.push({ check: '5xx', detail: f.load.statuses.samples.join(' | ') });
  return row;
}
