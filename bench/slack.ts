// `npm run bench:slack` / `make bench-slack`: signed Slack Events API requests posted to one
// `hermes gateway` process at increasing rates (open loop: a request leaves on schedule whether or
// not earlier ones were answered). Per rate: the accepted rate (200s per second) and the p50/p99
// time to Slack's ack, next to the raw Postgres single-row commit measured in the same run — the
// ack waits for exactly one commit (dedupe row + admission, hermes_admit), so that is its floor.
// BENCH_SCALE scales the seconds per step; BENCH_SLACK_RATES overrides the rates (comma-separated).
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { openDb, publishRevision } from '../services/core/index.js';
import { createTestDatabase } from '../test/support/services.js';
import { freePort } from '../test/support/ports.js';
import { testAgent } from '../test/support/system.js';
import { serverUrls } from '../test/support/services.js';
import { pgCommitRate } from './baselines.js';

const bin = fileURLToPath(new URL('../bin/hermes.js', import.meta.url));
const secret = 'bench-signing-secret';
const progress = (s: string) => process.stderr.write(`[bench:slack] ${s}\n`);
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

interface Step { rate: number; sent: number; accepted: number; failed: number; perSecond: number; p50Ms: number; p99Ms: number }

function signedEvent(n: number): { body: string; headers: Record<string, string> } {
  const ts = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    type: 'event_callback', team_id: 'T1', event_id: `Ev${randomUUID().replace(/-/g, '')}`, authorizations: [{ user_id: 'UBOT', is_bot: true }],
    event: { type: 'message', channel_type: 'im', channel: `D${n % 500}`, user: `U${n % 500}`, text: `message ${n}`, ts: `${ts}.${String(n).padStart(6, '0')}` },
  });
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`;
  return { body, headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': String(ts), 'x-slack-signature': signature } };
}

async function step(url: string, dispatcher: Agent, rate: number, seconds: number): Promise<Step> {
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1_000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const { body, headers } = signedEvent(i);
    const t0 = performance.now();
    inflight.push(request(`${url}/hooks/slack/default/demo`, { method: 'POST', headers, body, dispatcher }).then(async (res) => {
      await res.body.dump();
      if (res.statusCode === 200) latencies.push(performance.now() - t0);
      else failed++;
    }, () => { failed++; }));
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - started) / 1_000;
  latencies.sort((a, b) => a - b);
  return { rate, sent: total, accepted: latencies.length, failed, perSecond: latencies.length / elapsed, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

async function main(): Promise<void> {
  const { databaseUrl, redisUrl } = serverUrls();
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  const seconds = Math.max(1, 3 * scale);
  const rates = (process.env.BENCH_SLACK_RATES ?? '100,200,400,800,1600').split(',').map(Number).filter((r) => r > 0);

  progress('baseline: Postgres single-row insert+commit…');
  const pg1 = await pgCommitRate(databaseUrl, 1, Math.max(200, Math.round(2_000 * scale)));
  const pg8 = await pgCommitRate(databaseUrl, 8, Math.max(400, Math.round(4_000 * scale)));

  const database = await createTestDatabase();
  const db = openDb(database.url);
  await publishRevision(db, testAgent('http://127.0.0.1:9/v1', { platforms: [{ type: 'slack', credentialsSecret: 'slack', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention' }] }));
  const port = await freePort();
  const gateway = spawn(process.execPath, [bin, 'gateway'], {
    env: {
      PATH: process.env.PATH, DATABASE_URL: database.url, REDIS_URL: redisUrl, HERMES_QUEUE_PREFIX: `bench-slack-${randomUUID()}`, HERMES_PORT: String(port), HERMES_HOST: '127.0.0.1',
      HERMES_LOG_LEVEL: 'warn', HERMES_SECRETS_SOURCE: 'local', HERMES_SECRETS_ENV_ALLOW: 'SLACK_SIGNING_SECRET', SLACK_SIGNING_SECRET: secret,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 30_000 });
  const steps: Step[] = [];
  try {
    for (let i = 0; i < 300 && !(await fetch(`${url}/readyz`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 100));
    progress('warm-up…');
    await step(url, dispatcher, 50, 1);
    for (const rate of rates) {
      progress(`${rate} events/s for ${seconds} s…`);
      steps.push(await step(url, dispatcher, rate, seconds));
    }
  } finally {
    gateway.kill('SIGTERM');
    await new Promise((r) => gateway.once('exit', r));
    await dispatcher.close();
    await db.close();
    await database.drop();
  }

  const commitMs = 1_000 / pg1.perSecond;
  console.log('\nRaw baselines (same run)');
  console.log(`  ${pg1.label.padEnd(44)} ${`${fmt(pg1.perSecond)}/s`.padStart(10)}  (${fmt(commitMs, 3)} ms per commit)`);
  console.log(`  ${pg8.label.padEnd(44)} ${`${fmt(pg8.perSecond)}/s`.padStart(10)}`);
  console.log('\nHermes: signed Slack events → 200 ack (verify, admit in one commit, enqueue), one gateway process');
  console.log(`  ${'offered/s'.padStart(9)} ${'accepted/s'.padStart(10)} ${'failed'.padStart(6)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'p50 ÷ commit'.padStart(13)} ${'accepted ÷ 8-client commits'.padStart(28)}`);
  for (const s of steps) {
    console.log(`  ${String(s.rate).padStart(9)} ${fmt(s.perSecond, 1).padStart(10)} ${String(s.failed).padStart(6)} ${fmt(s.p50Ms, 2).padStart(8)} ${fmt(s.p99Ms, 2).padStart(8)} ${`${fmt(s.p50Ms / commitMs, 1)}×`.padStart(13)} ${`${fmt((100 * s.perSecond) / pg8.perSecond, 1)} %`.padStart(28)}`);
  }
  if (steps.some((s) => s.failed > 0)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
