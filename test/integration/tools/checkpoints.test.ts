// Checkpoints on the bubblewrap backend: the store under /workspace/.hermes/checkpoints is the
// agent's to write (a terminal command can), so nothing its config, hooks or attributes name may
// run when write_file or /rollback use it — that would be a command no approval guard saw.
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoints } from '../../../services/agent/index.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';

let box: TestSessionSandbox;

beforeAll(async () => { box = await testSessionSandbox(); });
afterAll(async () => { await box?.cleanup(); });

const signal = new AbortController().signal;

describe('checkpoints', () => {
  it('runs nothing that a command planted in the store (fsmonitor, hooks, filters, signing)', async () => {
    const checkpoints = new Checkpoints(box);
    await box.put('a.txt', 'one\n');
    await checkpoints.snapshot('first', signal);
    // Through the message API the fsmonitor line ran at the next write_file's checkpoint.
    const plant = await box.run({
      command: [
        'export GIT_DIR=/workspace/.hermes/checkpoints',
        'git config core.fsmonitor "echo fsmonitor > /workspace/RAN-fsmonitor; false"',
        'git config filter.evil.clean "echo filter > /workspace/RAN-filter; cat"',
        'git config filter.evil.smudge "echo smudge > /workspace/RAN-smudge; cat"',
        'git config commit.gpgSign true',
        'git config gpg.program "/workspace/sign.sh"',
        'git config log.showSignature true',
        'printf "#!/bin/sh\\necho signed > /workspace/RAN-gpg\\nexit 1\\n" > /workspace/sign.sh && chmod +x /workspace/sign.sh',
        'printf "* filter=evil\\n" > .gitattributes',
        'printf "#!/bin/sh\\necho hook > /workspace/RAN-hook\\n" > "$GIT_DIR/hooks/post-commit" && chmod +x "$GIT_DIR/hooks/post-commit"',
        'cp "$GIT_DIR/hooks/post-commit" "$GIT_DIR/hooks/post-index-change"',
      ].join(' && '),
      cwd: '/workspace',
    }, signal);
    expect(plant).toMatchObject({ status: 'ok', exitCode: 0 });
    await box.put('b.txt', 'two\n');
    const second = await checkpoints.snapshot('second', signal);
    expect(second).toMatch(/^[0-9a-f]{7,}$/);
    expect((await checkpoints.list(signal)).map((c) => c.reason)).toEqual(['second', 'first']);
    const back = await checkpoints.restore(2, signal);
    expect(back.restored?.reason).toBe('first');
    const files = await readdir(box.root);
    expect(files.filter((f) => f.startsWith('RAN-'))).toEqual([]);
    expect(files).toContain('a.txt');
    expect(files).not.toContain('b.txt');
  });
});
