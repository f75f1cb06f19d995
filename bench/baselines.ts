// Raw baselines measured in the same run as the system figures: what Postgres and BullMQ can do
// (and a bare HTTP round trip) on this machine with nothing of ours in between.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Agent, request } from 'undici';
import pg from 'pg';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { freePort } from '../test/support/ports.js';

export interface Rate {
  label: string;
  perSecond: number;
}

/** Single-row INSERT + COMMIT per statement (autocommit), `clients` connections in parallel. */
export async function pgCommitRate(databaseUrl: string, clients: number, total: number): Promise<Rate> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: clients });
  const table = `bench_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  await pool.query(`CREATE TABLE ${table} (id bigserial primary key, payload text, at timestamptz default now())`);
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < total) {
      next++;
      await pool.query(`INSERT INTO ${table} (payload) VALUES ($1)`, ['x']);
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  await pool.query(`DROP TABLE ${table}`);
  await pool.end();
  return { label: `postgres insert+commit, ${clients} client(s)`, perSecond: total / seconds };
}

/** Empty BullMQ jobs added in bulk and processed at `concurrency`. */
export async function bullmqRate(redisUrl: string, concurrency: number, total: number): Promise<Rate> {
  const prefix = `bench-${randomUUID()}`;
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('baseline', { connection, prefix });
  let done = 0;
  let finish!: () => void;
  const all = new Promise<void>((r) => { finish = r; });
  // BullMQ does not close connections it was given: both are quit below, or the process never exits.
  const workerConnection = connection.duplicate();
  const worker = new Worker('baseline', async () => undefined, { connection: workerConnection, prefix, concurrency });
  worker.on('completed', () => { if (++done === total) finish(); });
  const started = performance.now();
  for (let i = 0; i < total; i += 500) {
    await queue.addBulk(Array.from({ length: Math.min(500, total - i) }, () => ({ name: 'j', data: {}, opts: { removeOnComplete: true } })));
  }
  await all;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  await workerConnection.quit();
  await connection.quit();
  return { label: `bullmq add→processed, concurrency ${concurrency}`, perSecond: total / seconds };
}

/**
 * HTTP POST → 200 round trips over loopback with undici, one client, to a bare `node:http` server
 * in a process of its own (as the gateway and the model are to their callers): the cost of one of
 * the HTTP legs every turn has (client → gateway, worker → model).
 */
export async function httpRoundTripRate(total: number): Promise<Rate> {
  const port = await freePort();
  const server = spawn(process.execPath, ['-e', `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.end('{}')); }).listen(${port}, '127.0.0.1', () => process.stdout.write('ready'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const dispatcher = new Agent({ connections: 1 });
  const exited = once(server, 'exit');
  const died = exited.then(([code]) => { throw new Error(`the baseline HTTP server exited (${String(code)}) before it listened`); });
  died.catch(() => undefined); // it also settles at the kill below
  try {
    await Promise.race([once(server.stdout!, 'data'), died]);
    const post = async () => {
      const res = await request(`http://127.0.0.1:${port}/`, { method: 'POST', dispatcher, body: '{"messages":[]}', headers: { 'content-type': 'application/json' } });
      await res.body.text();
    };
    for (let i = 0; i < 50; i++) await post(); // warm-up: connection, JIT
    const started = performance.now();
    for (let i = 0; i < total; i++) await post();
    return { label: 'http POST→200 round trip, 1 client', perSecond: total / ((performance.now() - started) / 1000) };
  } finally {
    await dispatcher.close();
    server.kill('SIGKILL');
    await exited;
  }
}
