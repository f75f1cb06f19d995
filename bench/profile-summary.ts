// `node --import tsx bench/profile-summary.ts <file.cpuprofile> [--from s] [--to s] [--top n] [--callers name]`
// A V8 CPU profile (BENCH_PROFILE=<dir> writes one per process of the turn benchmark) summed up
// on a headless box, without DevTools: where the process was on CPU, by package or source file
// and by function, within a time window (a benchmark's process also starts up and shuts down:
// `--from 12 --to=-1.5` keeps the load phase only; a negative time counts from the end), and with
// `--callers <function>` the stacks that lead to a function. Written here because the tools that
// read .cpuprofile files are viewers (DevTools, speedscope), not summaries for a terminal.
// Caveat: a sample lands on the frame the thread is in when it is taken, so a native call that
// wakes another process (a socket `writev` to Postgres) also carries the time this process was
// preempted by the one it woke; /proc CPU time (bench/cpu.ts) is the measure of CPU use.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

/** The Chrome DevTools protocol's Profiler.Profile, as `node --cpu-prof` writes it (times in µs). */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Window {
  /** Seconds from the profile's start; negative: from its end. */
  from?: number;
  to?: number;
}

export interface Summary {
  /** Seconds the window spans, and on-CPU milliseconds in it (idle samples left out). */
  seconds: number;
  onCpuMs: number;
  /** Self time in ms, highest first: by package (`npm:pg`), Node internal module or our source file; by function. */
  byPlace: [string, number][];
  byFunction: [string, number][];
  /** With `callers`: the stacks (innermost caller first) leading to functions of that name, ms each. */
  callers: [string, number][];
}

type Frame = CpuProfile['nodes'][number]['callFrame'];

const ownRoot = fileURLToPath(new URL('..', import.meta.url));

/** `npm:<package>` for a dependency, `node:<module>` for Node's own, the repository path for ours. */
export function place(frame: Frame): string {
  const { url, functionName } = frame;
  if (!url) return functionName || '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `npm:${pkg[1]}`;
  const dep = /^node:internal\/deps\/([^/]+)/.exec(url);
  if (dep) return `node:${dep[1]}`;
  if (url.startsWith('node:')) return url.replace(/^node:internal\//, 'node:');
  return url.replace(/^file:\/\//, '').replace(ownRoot, '');
}

/** `function place:line`; a native frame (no script) by its name alone, as `place` gives it. */
const label = (f: Frame) => (f.url ? `${f.functionName || '(anonymous)'} ${place(f)}:${f.lineNumber + 1}` : place(f));

function bounds(p: CpuProfile, w: Window): [number, number] {
  const span = p.endTime - p.startTime;
  const at = (s: number | undefined, fallback: number) => (s === undefined ? fallback : s < 0 ? span + s * 1e6 : s * 1e6);
  return [at(w.from, 0), at(w.to, span)];
}

const sorted = (m: Map<string, number>): [string, number][] => [...m].map(([k, us]): [string, number] => [k, us / 1_000]).sort((a, b) => b[1] - a[1]);

export function summarize(p: CpuProfile, w: Window = {}, callersOf?: string): Summary {
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const [from, to] = bounds(p, w);
  const byPlace = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const callers = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, us: number) => m.set(k, (m.get(k) ?? 0) + us);
  let t = 0;
  let onCpu = 0;
  for (let i = 0; i < p.samples.length; i++) {
    // A sample's time is the delta to the next one (the profile's own convention: DevTools does the same).
    const us = p.timeDeltas[i + 1] ?? 0;
    t += p.timeDeltas[i] ?? 0;
    const node = nodes.get(p.samples[i]!);
    if (!node || t < from || t >= to || node.callFrame.functionName === '(idle)') continue;
    onCpu += us;
    add(byPlace, place(node.callFrame), us);
    add(byFunction, label(node.callFrame), us);
    if (callersOf !== undefined && node.callFrame.functionName === callersOf) {
      const chain: string[] = [];
      for (let up = parent.get(node.id); up !== undefined && chain.length < 12; up = parent.get(up)) {
        const f = nodes.get(up)!.callFrame;
        if (f.functionName !== '(root)') chain.push(label(f));
      }
      add(callers, chain.join(' < ') || '(root)', us);
    }
  }
  return { seconds: (to - from) / 1e6, onCpuMs: onCpu / 1_000, byPlace: sorted(byPlace), byFunction: sorted(byFunction), callers: sorted(callers) };
}

/** The profile at `path`; a file that is not one is refused with its name, not a TypeError later. */
export function readProfile(path: string): CpuProfile {
  let p: Partial<CpuProfile>;
  try {
    p = JSON.parse(readFileSync(path, 'utf8')) as Partial<CpuProfile>;
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`, { cause: err });
  }
  if (!Array.isArray(p?.nodes) || !Array.isArray(p.samples) || !Array.isArray(p.timeDeltas) || typeof p.startTime !== 'number' || typeof p.endTime !== 'number') {
    throw new Error(`${path} is not a V8 CPU profile (a .cpuprofile file, as node --cpu-prof writes)`);
  }
  return p as CpuProfile;
}

function print(s: Summary, top: number): void {
  const pct = (ms: number) => `${((100 * ms) / (s.onCpuMs || 1)).toFixed(1).padStart(5)} %  ${ms.toFixed(0).padStart(7)} ms`;
  console.log(`${s.seconds.toFixed(1)} s window, ${s.onCpuMs.toFixed(0)} ms on CPU (${((100 * s.onCpuMs) / 1_000 / (s.seconds || 1)).toFixed(0)} % of one core)`);
  console.log('\nSelf time by package, Node module or source file');
  for (const [k, ms] of s.byPlace.slice(0, top)) console.log(`  ${pct(ms)}  ${k}`);
  console.log('\nSelf time by function');
  for (const [k, ms] of s.byFunction.slice(0, top)) console.log(`  ${pct(ms)}  ${k}`);
  if (s.callers.length) {
    console.log('\nCallers (innermost first)');
    for (const [k, ms] of s.callers.slice(0, top)) console.log(`  ${pct(ms)}  ${k}`);
  }
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { from: { type: 'string' }, to: { type: 'string' }, top: { type: 'string', default: '25' }, callers: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help || positionals.length !== 1) {
    console.log('Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [--from <s>] [--to <s>] [--top <n>] [--callers <function>]\n'
      + '  --from, --to  the window, in seconds from the profile\'s start (negative: from its end, as --to=-1.5)\n'
      + '  --top         rows per table (25)\n'
      + '  --callers     also list the stacks leading to functions of this name (e.g. writev)');
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const num = (v: string | undefined, name: string) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new Error(`--${name}: "${v}" is not a number of seconds`);
    return n;
  };
  const from = num(values.from, 'from');
  const to = num(values.to, 'to');
  const top = Number(values.top);
  if (!Number.isInteger(top) || top < 1) throw new Error(`--top: "${values.top}" is not a whole number of rows above 0`);
  print(summarize(readProfile(positionals[0]!), { ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) }, values.callers), top);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    main();
  } catch (err) {
    console.error(`profile-summary: ${(err as Error).message}`);
    process.exitCode = 2;
  }
}
