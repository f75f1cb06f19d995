// What one turn costs the databases: Postgres transactions committed (pg_stat_database.xact_commit
// of the benchmark's own database, read-only statements included) and Redis commands processed
// (INFO stats), over a load run, minus what the idle system (heartbeats, sweeper, BullMQ's
// blocking waits) does in the same time; and the CPU time of each process (cpu.ts).
import pg from 'pg';
import { Redis } from 'ioredis';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { cpuPerTurn, readCpu, type CpuSource } from './cpu.js';

/** Postgres' commit counter, read once it holds what was done before the call (`DbCounters.commits`). */
export interface Commits {
  commits: number;
  commitsAt: number;
}

/** The counters that are current when read: Redis commands processed, CPU time by process. */
export interface Instant {
  redisCommands: number;
  at: number;
  cpuMs: Map<string, number>;
}

export type Counts = Commits & Instant;

export interface CostPerTurn {
  commitsPerTurn: number;
  redisCommandsPerTurn: number;
  /** CPU ms per turn by process (gateway, worker, postgres, redis, load generator), idle use subtracted. */
  cpuMsPerTurn: Map<string, number>;
}

export interface IdleRate {
  commits: number;
  redisCommands: number;
  cpuMs: Map<string, number>;
  /** Its last commit reading: a load that starts next can begin from it without waiting again. */
  settled: Commits;
}

/** How long `commits()` waits for Postgres' statistics to take in what was done before it. */
export const STATS_SETTLE_MS = 11_500;

/** The CPU row of Postgres (the postmaster and its backends), which bench/run.ts also reads by itself. */
export const POSTGRES_CPU = 'postgres';

export class DbCounters {
  private constructor(private readonly pgClient: pg.Client, private readonly redis: Redis, private readonly dbName: string, private readonly cpu: CpuSource[]) {}

  /** `processes`: the system's own (gateway, workers); Postgres, Redis and this process are added. */
  static async open(databaseUrl: string, redisUrl: string, processes: CpuSource[] = []): Promise<DbCounters> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const cpu = [...processes, { label: 'load generator + fake model', pid: process.pid }];
    // The postmaster's pid (first line of postmaster.pid; superuser only) and Redis's: their CPU counts when readable.
    const postmaster = await client.query<{ pid: string }>(`SELECT split_part(pg_read_file('postmaster.pid'), E'\\n', 1) AS pid`).catch(() => undefined);
    const pgPid = Number(postmaster?.rows[0]?.pid);
    if (pgPid > 0) cpu.push({ label: POSTGRES_CPU, pid: pgPid, tree: true });
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    if (redisPid > 0) cpu.push({ label: 'redis', pid: redisPid });
    return new DbCounters(client, redis, new URL(databaseUrl).pathname.slice(1), cpu);
  }

  /**
   * Postgres' commit count once it holds what was done before the call. A backend adds its
   * transactions to pg_stat_database at most once a second, when it goes idle; what it did within
   * that second stays pending while it stays idle, until its next transaction or its exit (seen on
   * Postgres 15: 100 commits of an idle connection were still missing 13 s later and appeared when
   * it closed). The system's pools close a connection idle for 10 s (pg-pool's default) and the
   * ones still in use flush on their next transaction, so the wait is longer than that.
   */
  async commits(settleMs = STATS_SETTLE_MS): Promise<Commits> {
    await new Promise((r) => setTimeout(r, settleMs));
    const { rows } = await this.pgClient.query<{ n: string }>(`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = $1`, [this.dbName]);
    return { commits: Number(rows[0]?.n ?? 0), commitsAt: performance.now() };
  }

  /** Redis commands processed and CPU time by process, now. */
  async instant(): Promise<Instant> {
    const info = await this.redis.info('stats');
    const redisCommands = Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
    return { redisCommands, at: performance.now(), cpuMs: readCpu(this.cpu) };
  }

  /** The idle system's rate per ms, over `ms` (Postgres' commits over that plus the settling wait). */
  async idleRate(ms = 3_000): Promise<IdleRate> {
    // This process's garbage from the baselines is collected now, not by V8's memory reducer some
    // seconds later: that collection (up to ≈ 0.3 s of CPU on V8's helper threads) fell into the
    // idle window and was subtracted from every turn of the load generator.
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    const a = { ...(await this.commits()), ...(await this.instant()) };
    await new Promise((r) => setTimeout(r, ms));
    const b = { ...(await this.instant()), ...(await this.commits()) };
    const span = b.at - a.at;
    const cpuMs = new Map([...cpuPerTurn(a.cpuMs, b.cpuMs, 1)].map(([k, v]) => [k, v / span]));
    return {
      commits: (b.commits - a.commits) / (b.commitsAt - a.commitsAt), redisCommands: (b.redisCommands - a.redisCommands) / span, cpuMs,
      settled: { commits: b.commits, commitsAt: b.commitsAt },
    };
  }

  static perTurn(before: Counts, after: Counts, idle: IdleRate, turns: number): CostPerTurn {
    const span = after.at - before.at;
    const cpu = cpuPerTurn(before.cpuMs, after.cpuMs, 1);
    return {
      commitsPerTurn: Math.max(0, after.commits - before.commits - idle.commits * (after.commitsAt - before.commitsAt)) / turns,
      redisCommandsPerTurn: Math.max(0, after.redisCommands - before.redisCommands - idle.redisCommands * span) / turns,
      cpuMsPerTurn: new Map([...cpu].map(([k, ms]) => [k, Math.max(0, ms - (idle.cpuMs.get(k) ?? 0) * span) / turns])),
    };
  }

  async close(): Promise<void> {
    await this.pgClient.end();
    this.redis.disconnect();
  }
}
