// `make bench-sandbox` (npm run bench:sandbox): the bubblewrap backend's per-call overhead on an
// empty command, next to raw baselines measured in the same run on the same machine — a plain
// spawn of `true`, and a raw `bwrap … true` with the fewest flags that run it — with the ratios.
// BENCH_SCALE scales the number of calls (default 200 each). Needs bwrap; no Postgres or Redis.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { bubblewrapSandbox, type ExecRequest } from '../services/sandbox/index.js';
import { systemDirArgs } from '../services/sandbox/bubblewrap-args.js';

const progress = (s: string) => process.stderr.write(`[bench] ${s}\n`);
const fmt = (n: number, d = 2) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

interface Timing { label: string; p50: number; mean: number; p99: number }

function summarize(label: string, ms: number[]): Timing {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { label, p50: at(0.5), mean: s.reduce((a, b) => a + b, 0) / s.length, p99: at(0.99) };
}

async function time(label: string, n: number, once: () => Promise<void>): Promise<Timing> {
  for (let i = 0; i < Math.min(10, n); i++) await once(); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await once();
    ms.push(performance.now() - t);
  }
  return summarize(label, ms);
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}`))));
  });
}

async function main(): Promise<void> {
  const n = Math.max(10, Math.round(200 * Number(process.env.BENCH_SCALE ?? '1')));
  const root = mkdtempSync(join(tmpdir(), 'hermes-bench-bwrap-'));
  chmodSync(root, 0o711);
  const sandbox = bubblewrapSandbox({ workspacesDir: root });
  const req: ExecRequest = {
    session: { namespace: 'bench', agent: 'bench', sessionId: randomUUID(), admissionId: randomUUID() },
    workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none', allow: [] },
    command: 'true', timeoutMs: 30_000, signal: new AbortController().signal, maxOutputChars: 10_000,
  };
  try {
    progress(`raw spawn true ×${n}…`);
    const raw = await time('raw spawn true', n, () => run('/bin/true', []));
    progress(`raw bwrap true ×${n}…`);
    const minimal = ['--unshare-all', ...systemDirArgs(), '--proc', '/proc', '--dev', '/dev', '--', '/bin/true'];
    const bwrap = await time('raw bwrap --unshare-all … true', n, () => run('bwrap', minimal));
    progress(`bubblewrap backend exec(true) ×${n}…`);
    const backend = await time('backend exec("true")', n, async () => {
      const r = await sandbox.exec(req);
      if (r.status !== 'ok' || r.exitCode !== 0) throw new Error(`backend call failed: ${r.status} ${r.reason ?? r.exitCode}`);
    });
    console.log(`\nbubblewrap sandbox: per-call time of an empty command (${n} sequential calls each)`);
    console.log(`  ${'what'.padEnd(34)} ${'p50 ms'.padStart(8)} ${'mean ms'.padStart(8)} ${'p99 ms'.padStart(8)}`);
    for (const t of [raw, bwrap, backend]) console.log(`  ${t.label.padEnd(34)} ${fmt(t.p50).padStart(8)} ${fmt(t.mean).padStart(8)} ${fmt(t.p99).padStart(8)}`);
    console.log('\nRatios (this run\'s own baselines)');
    console.log(`  backend vs raw bwrap: ${fmt(backend.p50 / bwrap.p50)}× at p50 (+${fmt(backend.p50 - bwrap.p50)} ms per call)`);
    console.log(`  backend vs raw spawn: ${fmt(backend.p50 / raw.p50)}× at p50 (+${fmt(backend.p50 - raw.p50)} ms per call)`);
    console.log(`  raw bwrap vs raw spawn: ${fmt(bwrap.p50 / raw.p50)}× at p50`);
  } finally {
    await sandbox.close();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
