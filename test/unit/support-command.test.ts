// The test helpers' command runner: a command that exits before reading its stdin is a result, not
// an unhandled EPIPE that fails the whole run (CI on f6aa565: promrules refusing a bad rules file).
import { describe, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';

describe('runCommand', () => {
  it('returns the exit code of commands that exit without reading their input', async () => {
    // Without the stdin error handler, many of these raise an uncaught EPIPE here, which
    // vitest reports as an error of this file.
    const codes = await Promise.all(Array.from({ length: 200 }, (_, i) => runCommand('/bin/sh', ['-c', `exit ${i % 3}`], { input: 'x'.repeat(i * 100), timeoutMs: 30_000 })));
    expect(codes.map((c) => c.code)).toEqual(Array.from({ length: 200 }, (_, i) => i % 3));
  });

  it('passes the input to a command that reads it', async () => {
    const out = await runCommand('/bin/cat', [], { input: 'hello\nworld\n', timeoutMs: 30_000 });
    expect(out).toEqual({ code: 0, stdout: 'hello\nworld\n', stderr: '' });
  });
});
