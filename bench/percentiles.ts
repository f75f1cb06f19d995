// Percentiles of a set of timings (nearest rank, as the other benchmarks print them).

export interface Summary {
  n: number;
  p50: number;
  p95: number;
  mean: number;
}

export function summarize(ms: number[]): Summary {
  if (ms.length === 0) throw new Error('no samples to summarize');
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { n: s.length, p50: at(0.5), p95: at(0.95), mean: s.reduce((a, b) => a + b, 0) / s.length };
}
