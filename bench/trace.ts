// `node --import tsx bench/trace.ts [turns]`: what one turn does to the databases, by counting.
// Runs the benchmark's system (gateway + one worker, zero-latency fake model), warms it up, then
// sends `turns` completions one after another while Postgres logs every statement (log_statement,
// on this checkout's own server only, reset afterwards) and a Redis MONITOR watches every command
// (scripts' inner calls included). Prints statements and commands per turn, grouped, by count.
import { readFile, stat } from 'node:fs/promises';
import pg from 'pg';
import { Redis } from 'ioredis';
import { serverUrls } from '../test/support/services.js';
import { startSystem } from './system.js';

const turns = Number(process.argv[2] ?? '10');
const { databaseUrl, redisUrl } = serverUrls();
const admin = new pg.Client({ connectionString: databaseUrl });
await admin.connect();
const logFile = (await admin.query<{ f: string }>(`SELECT current_setting('data_directory') || '/postgres.log' AS f`)).rows[0]!.f;
const system = await startSystem(redisUrl, 1);
const monitor = new Redis(redisUrl);
const redisSeen: string[] = [];
const raw: string[] = [];
try {
  await system.load(4, 40);
  const from = (await stat(logFile)).size;
  await admin.query(`ALTER SYSTEM SET log_statement = 'all'`);
  await admin.query(`ALTER SYSTEM SET log_line_prefix = '%m [%p] %d '`);
  await admin.query(`SELECT pg_reload_conf()`);
  await new Promise((r) => setTimeout(r, 300));
  const m = await monitor.monitor();
  m.on('monitor', (_time: string, args: string[], source: string) => { if (process.env.TRACE_RAW) raw.push(`${source} ${args.map((a) => a.slice(0, 60)).join(' ').slice(0, 160)}`); redisSeen.push(args[0]!.toLowerCase() === 'evalsha' || args[0]!.toLowerCase() === 'eval' ? `${args[0]} (script)` : args[0]!.toLowerCase()); });
  await system.load(1, turns);
  await new Promise((r) => setTimeout(r, 300));
  await m.disconnect();
  await admin.query(`ALTER SYSTEM RESET log_statement`);
  await admin.query(`ALTER SYSTEM RESET log_line_prefix`);
  await admin.query(`SELECT pg_reload_conf()`);
  const log = (await readFile(logFile)).subarray(from).toString();
  const db = new URL(system.url).host; // unused: statements are filtered by the benchmark's database name below
  void db;
  const statements = new Map<string, number>();
  for (const line of log.split('\n')) {
    const s = /\] (hermes_test_\w+) LOG:\s+(?:statement|execute [^:]*): (.*)$/.exec(line);
    if (!s) continue;
    const text = s[2]!.replace(/\s+/g, ' ').slice(0, 110);
    statements.set(text, (statements.get(text) ?? 0) + 1);
  }
  console.log(`\nPostgres statements per turn (${turns} turns at c=1; idle work in the same time included)`);
  for (const [text, n] of [...statements].sort((a, b) => b[1] - a[1])) console.log(`  ${(n / turns).toFixed(2).padStart(6)}  ${text}`);
  const commands = new Map<string, number>();
  for (const c of redisSeen) commands.set(c, (commands.get(c) ?? 0) + 1);
  console.log(`\nRedis commands per turn (MONITOR; ${redisSeen.length / turns} in all)`);
  for (const [c, n] of [...commands].sort((a, b) => b[1] - a[1])) console.log(`  ${(n / turns).toFixed(2).padStart(6)}  ${c}`);
  if (process.env.TRACE_RAW) console.log(`\nRedis, as seen by MONITOR:\n${raw.join('\n')}`);
} finally {
  await system.close();
  monitor.disconnect();
  await admin.end();
}
