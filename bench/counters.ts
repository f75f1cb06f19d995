// What one turn costs the databases: Postgres transactions committed (pg_stat_database.xact_commit
// of the benchmark's own database, read-only statements included) and Redis commands processed
// (INFO stats), over a load run, minus what the idle system (heartbeats, sweeper, BullMQ's
// blocking waits) does in the same time; and the CPU time of each process (cpu.ts).
import pg from 'pg';
import { Redis } from 'ioredis';
import { cpuPerTurn, readCpu, type CpuSource } from './cpu.js';

export interface Counts {
  commits: number;
  redisCommands: number;
  at: number;
  cpuMs: Map<string, number>;
}

export interface CostPerTurn {
  commitsPerTurn: number;
  redisCommandsPerTurn: number;
  /** CPU ms per turn by process (gateway, worker, postgres, redis, load generator), idle use subtracted. */
  cpuMsPerTurn: Map<string, number>;
}

type IdleRate = { commits: number; redisCommands: number; cpuMs: Map<string, number> };

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

  /** Counters now; Postgres flushes backend statistics about once a second, so wait that long first. */
  async read(settleMs = 1_100): Promise<Counts> {
    await new Promise((r) => setTimeout(r, settleMs));
    const { rows } = await this.pgClient.query<{ n: string }>(`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = $1`, [this.dbName]);
    const info = await this.redis.info('stats');
    const redisCommands = Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
    return { commits: Number(rows[0]?.n ?? 0), redisCommands, at: performance.now(), cpuMs: readCpu(this.cpu) };
  }

  /** The idle system's rate per ms, measured over `ms`. */
  async idleRate(ms = 3_000): Promise<IdleRate> {
    const a = await this.read();
    await new Promise((r) => setTimeout(r, ms));
    const b = await this.read();
    const span = b.at - a.at;
    const cpuMs = new Map([...cpuPerTurn(a.cpuMs, b.cpuMs, 1)].map(([k, v]) => [k, v / span]));
    return { commits: (b.commits - a.commits) / span, redisCommands: (b.redisCommands - a.redisCommands) / span, cpuMs };
  }

  static perTurn(before: Counts, after: Counts, idle: IdleRate, turns: number): CostPerTurn {
    const span = after.at - before.at;
    const cpu = cpuPerTurn(before.cpuMs, after.cpuMs, 1);
    return {
      commitsPerTurn: Math.max(0, after.commits - before.commits - idle.commits * span) / turns,
      redisCommandsPerTurn: Math.max(0, after.redisCommands - before.redisCommands - idle.redisCommands * span) / turns,
      cpuMsPerTurn: new Map([...cpu].map(([k, ms]) => [k, Math.max(0, ms - (idle.cpuMs.get(k) ?? 0) * span) / turns])),
    };
  }

  async close(): Promise<void> {
    await this.pgClient.end();
    this.redis.disconnect();
  }
}
