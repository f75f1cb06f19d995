// The product's modules form no import cycle (type-only imports count: they tie two modules'
// designs together just the same). The graph is read with TypeScript's own pre-processor, so
// every form of import and re-export is seen; a cycle is printed as its path.
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const SOURCES = ['services', 'operator', 'bin'];

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'generated') return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Relative imports of `file`, resolved to the .ts files they name. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles.map((f) => f.fileName).filter((n) => n.startsWith('.')).map((n) => {
    const target = resolve(dirname(file), n).replace(/\.js$/, '.ts');
    return existsSync(target) ? target : join(target.replace(/\.ts$/, ''), 'index.ts');
  });
}

/** One cycle per strongly connected component with more than one module (or a self-import). */
function findCycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next); low.set(v, next); next++;
    stack.push(v); onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (;;) { const w = stack.pop()!; onStack.delete(w); component.push(w); if (w === v) break; }
    if (component.length > 1 || graph.get(v)?.includes(v)) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

describe('import cycles', () => {
  it('finds a cycle when there is one (the checker itself works)', () => {
    expect(findCycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']]);
    expect(findCycles(new Map([['a', ['b']], ['b', []]]))).toEqual([]);
  });

  it('the product has none', () => {
    const files = SOURCES.flatMap((d) => sourceFiles(join(root, d)));
    expect(files.length).toBeGreaterThan(100);
    const graph = new Map(files.map((f) => [f, importsOf(f)]));
    const cycles = findCycles(graph).map((c) => c.map((f) => relative(root, f)));
    expect(cycles).toEqual([]);
  });
});
