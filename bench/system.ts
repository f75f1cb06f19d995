// The system under load, as deployed: `hermes gateway` and `hermes worker` as separate
// processes on a fresh database, a zero-latency fake model, and a load generator here that sends
// OpenAI-compatible chat completions (message → reply latency) at a fixed concurrency.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { openDb, publishRevision, sha256 } from '../services/core/index.js';
import { startFakeOpenAI, type FakeOpenAI } from '../test/support/fake-openai.js';
import { createTestDatabase, type TestDatabase } from '../test/support/services.js';
import { freePort } from '../test/support/ports.js';
import { testAgent } from '../test/support/system.js';
import { DbCounters, type Commits, type CostPerTurn, type Counts, type IdleRate } from './counters.js';

const bin = fileURLToPath(new URL('../bin/hermes.js', import.meta.url));
const apiKey = 'bench-key-0123456789';

export interface LoadResult {
  concurrency: number;
  turns: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
  cost: CostPerTurn;
}

export interface RunningSystem {
  url: string;
  workers: number;
  load(concurrency: number, turns: number): Promise<LoadResult>;
  close(): Promise<void>;
}

/** BENCH_PROFILE=<dir>: each process writes a V8 CPU profile there when it exits (open it in Chrome DevTools). */
const profileArgs = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];

function child(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const p = spawn(process.execPath, [...profileArgs, bin, ...args], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  return p;
}

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 1_200; i++) {
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.ok) return;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway at ${url} did not become ready`);
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

export interface SystemOptions {
  /** How long the fake model takes to answer (default 0: the CPU-bound case). */
  modelLatencyMs?: number;
  /** Turns each worker runs at once (HERMES_TURN_CONCURRENCY; default 64). */
  turnConcurrency?: number;
}

/** A gateway and `workers` worker processes on a fresh database. */
export async function startSystem(redisUrl: string, workers = 1, options: SystemOptions = {}): Promise<RunningSystem> {
  const database: TestDatabase = await createTestDatabase();
  const latency = options.modelLatencyMs ?? 0;
  const model: FakeOpenAI = await startFakeOpenAI(() => ({ text: 'pong', chunks: 1, ...(latency > 0 ? { hold: new Promise<void>((r) => setTimeout(r, latency)) } : {}) }));
  const db = openDb(database.url);
  await publishRevision(db, { ...testAgent(model.baseURL), api: { enabled: true, keySha256: [sha256(apiKey)] } });
  await db.close();
  const port = await freePort();
  const env = {
    PATH: process.env.PATH, DATABASE_URL: database.url, REDIS_URL: redisUrl, HERMES_QUEUE_PREFIX: `bench-${randomUUID()}`,
    HERMES_PORT: String(port), HERMES_HOST: '127.0.0.1', HERMES_LOG_LEVEL: 'warn', OPENAI_API_KEY: 'sk-bench', HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY', HERMES_TURN_CONCURRENCY: String(options.turnConcurrency ?? 64), HERMES_WORKER_PORT: '0',
  };
  const procs = [child(['gateway'], env), ...Array.from({ length: workers }, () => child(['worker'], env))];
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(url);
  } catch (err) {
    for (const p of procs) p.kill('SIGKILL');
    throw err;
  }
  const dispatcher = new Agent({ connections: 128, keepAliveTimeout: 30_000 });
  const counters = await DbCounters.open(database.url, redisUrl, procs.map((p, i) => ({ label: i === 0 ? 'gateway' : 'worker', pid: p.pid! })));
  let idle: IdleRate | undefined;
  // The last settled commit reading: nothing but the idle system has run since, so the next load starts from it.
  let settled: Commits | undefined;

  async function one(): Promise<number> {
    const started = performance.now();
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST', dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default/demo', messages: [{ role: 'user', content: 'ping' }] }),
    });
    const body = (await res.body.json()) as { choices?: { message: { content: string } }[] };
    if (res.statusCode !== 200 || body.choices?.[0]?.message.content !== 'pong') throw new Error(`unexpected answer ${res.statusCode}`);
    return performance.now() - started;
  }

  return {
    url,
    workers,
    async load(concurrency, turns) {
      idle ??= await counters.idleRate();
      settled ??= idle.settled;
      const before: Counts = { ...settled, ...(await counters.instant()) };
      const latencies: number[] = [];
      let failures = 0;
      let next = 0;
      const started = performance.now();
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (next < turns) {
          next++;
          try {
            latencies.push(await one());
          } catch {
            failures++;
          }
        }
      }));
      const seconds = (performance.now() - started) / 1000;
      const now = await counters.instant();
      settled = await counters.commits();
      const cost = DbCounters.perTurn(before, { ...now, ...settled }, idle, latencies.length || 1);
      latencies.sort((a, b) => a - b);
      return { concurrency, turns, perSecond: latencies.length / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), failures, cost };
    },
    async close() {
      await counters.close();
      await dispatcher.close();
      await Promise.all(procs.map((p) => new Promise((r) => { p.once('exit', r); p.kill('SIGTERM'); })));
      await model.close();
      await database.drop();
    },
  };
}
