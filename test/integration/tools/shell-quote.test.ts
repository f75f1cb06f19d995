// The quoting that keeps model text literal on sandbox command lines, proved against a real
// /bin/sh: every hostile word comes back byte for byte and nothing in it runs.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { shq, UnquotableError } from '../../../services/agent/index.js';

const dir = mkdtempSync(join(tmpdir(), 'shq-'));
const canary = join(dir, 'pwned');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hostile = [
  '', 'plain', "it's", "'", "''", `'\\''`, '"double"', '$(touch CANARY)', '`touch CANARY`', '${HOME}', '$HOME', '\\', '\\\\n',
  'a\nb', '\n', 'line1\r\nline2', '; touch CANARY', '&& touch CANARY', '| touch CANARY', '* ? [a-z]', '~', '-rf', '--', '!', '!!',
  "'; touch CANARY; echo '", '$(echo $(touch CANARY))', '\t\v\f', 'ünïcödé 🎉', "x'$(touch CANARY)'y", '%s%n', '#comment',
].map((s) => s.replace(/CANARY/g, canary));

const echo = (word: string) => execFileSync('/bin/sh', ['-c', `printf '%s' ${shq(word)}`], { encoding: 'utf8' });

describe('shq', () => {
  it('gives back every hostile word exactly, and runs none of it', () => {
    for (const word of hostile) expect(echo(word), JSON.stringify(word)).toBe(word);
    expect(existsSync(canary)).toBe(false);
  });

  it('keeps words apart when several are on one line', () => {
    const words = ['a b', "c'd", '$(e)', 'f\ng'];
    const out = execFileSync('/bin/sh', ['-c', `for w in ${words.map((w) => shq(w)).join(' ')}; do printf '[%s]' "$w"; done`], { encoding: 'utf8' });
    expect(out).toBe(words.map((w) => `[${w}]`).join(''));
  });

  it('refuses NUL instead of cutting the word short', () => {
    expect(() => shq('a\0b', 'pattern')).toThrow(UnquotableError);
    expect(() => shq('a\0b', 'pattern')).toThrow(/pattern contains a NUL/);
  });
});
