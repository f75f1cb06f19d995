// patch's unified diff, checked against the system's `diff -u` on the same texts: the hunks must
// be the same (headers aside), for changes at the start, the end, in the middle and far apart.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unifiedDiff } from '../../../services/agent/index.js';

const dir = mkdtempSync(join(tmpdir(), 'udiff-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function systemDiff(a: string, b: string): string {
  writeFileSync(join(dir, 'a'), a);
  writeFileSync(join(dir, 'b'), b);
  try {
    return execFileSync('diff', ['-u', join(dir, 'a'), join(dir, 'b')], { encoding: 'utf8' });
  } catch (err) {
    return (err as { stdout: string }).stdout; // exit 1: the files differ
  }
}

const hunks = (d: string) => d.split('\n').filter((l) => !l.startsWith('---') && !l.startsWith('+++')).join('\n');
const lines = (n: number, f = (i: number) => `line ${i}`) => Array.from({ length: n }, (_, i) => f(i + 1)).join('\n') + '\n';

describe('unifiedDiff', () => {
  const base = lines(40);
  const cases: [string, string][] = [
    ['one line in the middle', base.replace('line 20\n', 'line twenty\n')],
    ['the first line', base.replace('line 1\n', 'first\n')],
    ['the last line', base.replace('line 40\n', 'last\n')],
    ['lines inserted', base.replace('line 10\n', 'line 10\nnew a\nnew b\n')],
    ['lines deleted', base.replace('line 5\nline 6\nline 7\n', '')],
    ['two changes far apart (two hunks)', base.replace('line 3\n', 'three\n').replace('line 35\n', 'thirty-five\n')],
    ['two changes close together (one hunk)', base.replace('line 10\n', 'ten\n').replace('line 15\n', 'fifteen\n')],
    ['everything', lines(5, (i) => `other ${i}`)],
  ];
  for (const [what, changed] of cases) {
    it(`matches diff -u: ${what}`, () => {
      expect(hunks(unifiedDiff('/workspace/f', base, changed))).toBe(hunks(systemDiff(base, changed)));
    });
  }

  it('names the file and is empty when nothing changed', () => {
    expect(unifiedDiff('/workspace/f', base, base)).toBe('');
    expect(unifiedDiff('/workspace/f', 'a\n', 'b\n').split('\n').slice(0, 2)).toEqual(['--- a/workspace/f', '+++ b/workspace/f']);
  });
});
