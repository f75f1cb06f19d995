// bench/profile-summary.ts: a V8 CPU profile summed up by place and function, within a window.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { place, readProfile, summarize, type CpuProfile } from '../../bench/profile-summary.js';

const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

// root → drain (ours) → query (pg) → writev (native), and root → (idle) for the idle samples.
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 5] },
    { id: 2, callFrame: frame('drain', 'file:///repo/services/worker/session-drainer.ts', 9), children: [3] },
    { id: 3, callFrame: frame('query', 'file:///repo/node_modules/pg/lib/client.js', 99), children: [4] },
    { id: 4, callFrame: frame('writev') },
    { id: 5, callFrame: frame('(idle)') },
  ],
  startTime: 0,
  // Samples every 1 ms: 2 idle, then drain, query, writev ×2, idle, drain ×2; the last sample has no duration.
  samples: [5, 5, 2, 3, 4, 4, 5, 2, 2],
  timeDeltas: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000],
  endTime: 10_000,
};

describe('profile summary', () => {
  it('sums self time on CPU by place and by function, leaving idle samples out', () => {
    const s = summarize(profile, {}, 'writev');
    expect(s.onCpuMs).toBe(5);
    expect(Object.fromEntries(s.byPlace)).toEqual({ '/repo/services/worker/session-drainer.ts': 2, 'npm:pg': 1, writev: 2 });
    expect(Object.fromEntries(s.byFunction)).toEqual({ 'drain /repo/services/worker/session-drainer.ts:10': 2, 'query npm:pg:100': 1, writev: 2 });
    expect(s.callers).toEqual([['query npm:pg:100 < drain /repo/services/worker/session-drainer.ts:10', 2]]);
  });

  it('keeps only the samples inside the window; a negative bound counts from the end', () => {
    // Samples at 4 ms (query) and 5 ms (writev) only.
    expect(summarize(profile, { from: 0.004, to: -0.0045 }).byPlace).toEqual([['npm:pg', 1], ['writev', 1]]);
    expect(summarize(profile, { from: 0.008 }).onCpuMs).toBe(1);
  });

  it('names a dependency by its package, scoped or not, and Node internals by module', () => {
    expect(place(frame('f', 'file:///x/node_modules/@opentelemetry/sdk-trace-base/build/a.js'))).toBe('npm:@opentelemetry/sdk-trace-base');
    expect(place(frame('f', 'node:internal/deps/undici/undici'))).toBe('node:undici');
    expect(place(frame('f', 'node:events'))).toBe('node:events');
  });

  it('refuses a file that is not a CPU profile, naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'profile-summary-'));
    const good = join(dir, 'good.cpuprofile');
    const other = join(dir, 'other.json');
    const broken = join(dir, 'broken.cpuprofile');
    writeFileSync(good, JSON.stringify(profile));
    writeFileSync(other, JSON.stringify({ nodes: [] }));
    writeFileSync(broken, '{"nodes": [');
    expect(readProfile(good)).toEqual(profile);
    expect(() => readProfile(other)).toThrow(`${other} is not a V8 CPU profile`);
    expect(() => readProfile(broken)).toThrow(broken);
  });
});
