// A unified diff of two texts (what `patch` returns), by Myers' O(ND) line diff after trimming the
// common head and tail. Our own small implementation: the `diff` npm package is not among the
// project's dependencies, and adding one means a new install for every checkout for ~80 lines.
type Op = { kind: ' ' | '-' | '+'; line: string };

const CONTEXT = 3;

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** Myers' shortest edit script from `a` to `b`. */
function myers(a: string[], b: string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  const at = (arr: Int32Array, d: number, k: number) => arr[k + d + 1] ?? 0;
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(max - d, max + d + 3));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[max + k]! < v[max + k + 2]!) ? v[max + k + 2]! : v[max + k]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[max + k + 1] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, at);
    }
  }
  return [];
}

function backtrack(a: string[], b: string[], trace: Int32Array[], at: (arr: Int32Array, d: number, k: number) => number): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d >= 0; d--) {
    const t = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && at(t, d, k - 1) < at(t, d, k + 1)) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : at(t, d, prevK);
    const prevY = d === 0 ? 0 : prevX - prevK;
    while (x > prevX && y > prevY) { ops.push({ kind: ' ', line: a[--x]! }); y--; }
    if (d === 0) break;
    if (x === prevX) ops.push({ kind: '+', line: b[--y]! });
    else ops.push({ kind: '-', line: a[--x]! });
  }
  return ops.reverse();
}

/** The edit script of two texts' lines, the common head and tail included as context. */
function diffOps(oldText: string, newText: string): Op[] {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const same = (lines: string[]) => lines.map((line): Op => ({ kind: ' ', line }));
  return [...same(a.slice(0, head)), ...myers(a.slice(head, a.length - tail), b.slice(head, b.length - tail)), ...same(a.slice(a.length - tail))];
}

const range = (start: number, count: number) => (count === 1 ? `${start}` : `${count === 0 ? start - 1 : start},${count}`);

/** `--- a/<path>` / `+++ b/<path>` and hunks with 3 lines of context; empty when nothing changed. */
export function unifiedDiff(path: string, oldText: string, newText: string): string {
  const ops = diffOps(oldText, newText);
  const changed = ops.map((o, i) => (o.kind === ' ' ? -1 : i)).filter((i) => i >= 0);
  if (changed.length === 0) return '';
  const out = [`--- a${path}`, `+++ b${path}`];
  let i = 0;
  while (i < changed.length) {
    let j = i;
    while (j + 1 < changed.length && changed[j + 1]! - changed[j]! <= 2 * CONTEXT + 1) j++;
    const from = Math.max(0, changed[i]! - CONTEXT);
    const to = Math.min(ops.length, changed[j]! + CONTEXT + 1);
    const before = ops.slice(0, from);
    const oldStart = before.filter((o) => o.kind !== '+').length + 1;
    const newStart = before.filter((o) => o.kind !== '-').length + 1;
    const hunk = ops.slice(from, to);
    out.push(`@@ -${range(oldStart, hunk.filter((o) => o.kind !== '+').length)} +${range(newStart, hunk.filter((o) => o.kind !== '-').length)} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    i = j + 1;
  }
  return `${out.join('\n')}\n`;
}
