// The test control plane's start: a kube-apiserver that exits before it is ready is started again
// on a fresh port (a port found free may be taken before the server binds it), at most three
// times, and the error then carries each attempt's cause from the server's own log. The cause is
// forced here with a flag kube-apiserver refuses.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pidsWithArg, startControlPlane } from '../../support/kube/index.js';

describe('starting the test control plane', () => {
  it('tries three times when kube-apiserver exits before it is ready, then fails with every attempt\'s log', async () => {
    const err = await startControlPlane({ apiserverFlags: ['--hermes-no-such-flag=1'] }).then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).toMatch(/kube-apiserver exited with code \d+ before it was ready/);
    expect(err?.message.match(/unknown flag: --hermes-no-such-flag/g)?.length).toBeGreaterThanOrEqual(3);
    expect(err?.message).toContain('--- earlier attempts ---');
    const dir = /last lines of (\S+)\/kube-apiserver\.log/.exec(err?.message ?? '')?.[1];
    expect(dir).toBeDefined();
    // Nothing is left running or on disk.
    expect(existsSync(dir!)).toBe(false);
    expect(pidsWithArg(`--data-dir=${dir}/etcd`)).toEqual([]);
  });
});
