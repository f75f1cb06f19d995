// CPU time per turn, by process: the benchmark runs everything on one machine, so the CPU one turn
// costs across the gateway, the worker(s), Postgres, Redis and the load generator (with the fake
// model) is what bounds turns/s once the cores are busy — and it does not change when other work
// on the machine slows the wall clock. Linux /proc only (elsewhere the figures are left out).
import { readFileSync, readdirSync } from 'node:fs';

const ticksPerSecond = 100; // USER_HZ: 100 on every Linux the kernel ABI allows

/** utime + stime (+ reaped children's, for a parent like the postmaster) of `pid`, in ms; undefined when unreadable. */
function processCpuMs(pid: number, withReapedChildren = false): number | undefined {
  try {
    // Fields after the command name (which may hold spaces and parentheses): state is field 3.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const at = (field: number) => Number(f[field - 3]);
    const ticks = at(14) + at(15) + (withReapedChildren ? at(16) + at(17) : 0);
    return (ticks * 1_000) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/** Live children of `pid` (all its threads' children). */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
  } catch {
    return [];
  }
}

/** A process whose CPU is counted: one pid, or a tree (a postmaster and its backends). */
export interface CpuSource {
  label: string;
  pid: number;
  tree?: boolean;
}

/** CPU ms used so far by each source; `self` is this process (load generator and fake model). */
export function readCpu(sources: readonly CpuSource[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of sources) {
    const own = processCpuMs(s.pid, s.tree);
    if (own === undefined) continue;
    const children = s.tree ? childrenOf(s.pid).reduce((sum, c) => sum + (processCpuMs(c) ?? 0), 0) : 0;
    out.set(s.label, (out.get(s.label) ?? 0) + own + children);
  }
  return out;
}

/** Per-turn CPU ms by label between two readings. */
export function cpuPerTurn(before: Map<string, number>, after: Map<string, number>, turns: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [label, ms] of after) out.set(label, (ms - (before.get(label) ?? ms)) / Math.max(1, turns));
  return out;
}
