// `npm run bench` / `make bench`: the system's turns/s and message→reply latency, printed next
// to raw baselines measured in the same run on the same machine, with the ratios.
import { bullmqRate, pgCommitRate, type Rate } from './baselines.js';
import { startSystem, type LoadResult } from './system.js';
import { loopOverhead, memoryPerTurn, printLoop } from './loop.js';
import { serverUrls } from '../test/support/services.js';

const progress = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

async function main(): Promise<void> {
  const { databaseUrl, redisUrl } = serverUrls();
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  const n = (x: number) => Math.max(10, Math.round(x * scale));

  progress('baseline: Postgres single-row insert+commit…');
  const pg1 = await pgCommitRate(databaseUrl, 1, n(2_000));
  const pg8 = await pgCommitRate(databaseUrl, 8, n(4_000));
  progress('baseline: BullMQ empty job add→processed…');
  const mq1 = await bullmqRate(redisUrl, 1, n(2_000));
  const mq16 = await bullmqRate(redisUrl, 16, n(5_000));

  progress('system: starting gateway and worker processes…');
  const system = await startSystem(redisUrl);
  let c1: LoadResult;
  let c64: LoadResult;
  try {
    progress('system: warm-up…');
    await system.load(8, n(100));
    progress('system: concurrency 1…');
    c1 = await system.load(1, n(200));
    progress('system: concurrency 64…');
    c64 = await system.load(64, n(1_000));
  } finally {
    await system.close();
  }

  const rows: [string, string][] = [];
  const rate = (r: Rate) => rows.push([r.label, `${fmt(r.perSecond)}/s`]);
  [pg1, pg8, mq1, mq16].forEach(rate);
  console.log('\nRaw baselines (same run)');
  for (const [k, v] of rows) console.log(`  ${k.padEnd(44)} ${v.padStart(10)}`);
  console.log('\nHermes: OpenAI-compatible message → reply, zero-latency fake model');
  console.log(`  ${'concurrency'.padEnd(12)} ${'turns/s'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'failures'.padStart(9)}  ratios`);
  for (const [r, pg, mq] of [[c1, pg1, mq1], [c64, pg8, mq16]] as const) {
    console.log(`  ${String(r.concurrency).padEnd(12)} ${fmt(r.perSecond, 1).padStart(9)} ${fmt(r.p50Ms, 1).padStart(8)} ${fmt(r.p99Ms, 1).padStart(8)} ${String(r.failures).padStart(9)}  ` +
      `${fmt(r.perSecond / pg.perSecond, 3)} × pg commits (${pg.label.split(', ')[1]}), ${fmt(r.perSecond / mq.perSecond, 3)} × bullmq jobs (${mq.label.split(', ')[1]})`);
  }
  progress('agent loop: overhead and memory per turn…');
  printLoop(await loopOverhead(n(10_000)), await memoryPerTurn(n(1_000)));
  if (c1.failures || c64.failures) process.exitCode = 1;
}

await main();
