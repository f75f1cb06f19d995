// What one turn costs the databases: Postgres transactions committed (pg_stat_database.xact_commit
// of the benchmark's own database, read-only statements included) and Redis commands processed
// (INFO stats), over a load run, minus what the idle system (heartbeats, sweeper, BullMQ's
// blocking waits) does in the same time.
import pg from 'pg';
import { Redis } from 'ioredis';

export interface Counts {
  commits: number;
  redisCommands: number;
  at: number;
}

export interface CostPerTurn {
  commitsPerTurn: number;
  redisCommandsPerTurn: number;
}

export class DbCounters {
  private constructor(private readonly pgClient: pg.Client, private readonly redis: Redis, private readonly dbName: string) {}

  static async open(databaseUrl: string, redisUrl: string): Promise<DbCounters> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    return new DbCounters(client, redis, new URL(databaseUrl).pathname.slice(1));
  }

  /** Counters now; Postgres flushes backend statistics about once a second, so wait that long first. */
  async read(settleMs = 1_100): Promise<Counts> {
    await new Promise((r) => setTimeout(r, settleMs));
    const { rows } = await this.pgClient.query<{ n: string }>(`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = $1`, [this.dbName]);
    const info = await this.redis.info('stats');
    const redisCommands = Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
    return { commits: Number(rows[0]?.n ?? 0), redisCommands, at: performance.now() };
  }

  /** The idle system's rate per ms, measured over `ms`. */
  async idleRate(ms = 3_000): Promise<{ commits: number; redisCommands: number }> {
    const a = await this.read();
    await new Promise((r) => setTimeout(r, ms));
    const b = await this.read();
    const span = b.at - a.at;
    return { commits: (b.commits - a.commits) / span, redisCommands: (b.redisCommands - a.redisCommands) / span };
  }

  static perTurn(before: Counts, after: Counts, idle: { commits: number; redisCommands: number }, turns: number): CostPerTurn {
    const span = after.at - before.at;
    return {
      commitsPerTurn: Math.max(0, after.commits - before.commits - idle.commits * span) / turns,
      redisCommandsPerTurn: Math.max(0, after.redisCommands - before.redisCommands - idle.redisCommands * span) / turns,
    };
  }

  async close(): Promise<void> {
    await this.pgClient.end();
    this.redis.disconnect();
  }
}
