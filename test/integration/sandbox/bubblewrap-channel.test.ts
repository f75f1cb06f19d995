// The bubblewrap backend's line channel (Sandbox.open): the process's stdin and stdout carry
// lines both ways, its stderr is the output, it runs in the same sandbox as `exec` (workspace,
// no inherited environment), `kill` ends it, a line past the limit ends it, nothing is left.
import { afterAll, describe, expect, it } from 'vitest';
import { bubblewrapSandbox, MAX_CHANNEL_LINE_BYTES } from '../../../services/sandbox/index.js';
import { LineSplitter } from '../../../services/sandbox/channel-lines.js';
import { leftovers, request, tempRoot, waitFor } from './bubblewrap-helpers.js';

const root = tempRoot();
const sandbox = bubblewrapSandbox({ workspacesDir: root.dir });
afterAll(async () => { await sandbox.close(); root.remove(); });

describe('bubblewrap channel', () => {
  it('carries lines both ways; stderr is the output; the exit code is the process\'s', async () => {
    const lines: string[] = [];
    const channel = await sandbox.open!({
      ...request({ command: 'while read -r l; do echo "got $l in $(pwd) as $USER"; echo "log $l" >&2; done; env | grep -c HERMES_; exit 4', env: { EXTRA: 'x' } }),
      onLine: (l) => { lines.push(l); if (lines.length === 2) channel.end(); },
    });
    channel.send('a');
    channel.send('b');
    const r = await channel.done;
    expect(lines.slice(0, 2)).toEqual(['got a in /workspace as sandbox', 'got b in /workspace as sandbox']);
    expect(lines[2]).toBe('0'); // no HERMES_* of the worker or the wrapper
    expect(r).toMatchObject({ status: 'ok', exitCode: 4, output: 'log a\nlog b\n' });
  });

  it('kill() ends it and leaves nothing running', async () => {
    const channel = await sandbox.open!({ ...request({ command: 'sleep 300' }), onLine: () => undefined });
    channel.kill();
    expect((await channel.done).status).toBe('interrupted');
    await waitFor('no sandbox processes', () => leftovers().length === 0);
  });

  it('ends a process whose line passes the limit', async () => {
    const channel = await sandbox.open!({ ...request({ command: `head -c ${MAX_CHANNEL_LINE_BYTES + 10} /dev/zero | tr '\\0' x; sleep 300` }), onLine: () => undefined });
    const r = await channel.done;
    expect(r.status).toBe('interrupted');
    expect(r.reason).toContain('longer than');
  });

  it('splits lines across chunks, drops CR before LF, and refuses an endless line once', () => {
    const got: string[] = [];
    let tooLong = 0;
    const s = new LineSplitter((l) => got.push(l), () => { tooLong++; }, 8);
    s.push(Buffer.from('ab'));
    const e = Buffer.from('é'); // two bytes, split across chunks
    s.push(Buffer.concat([Buffer.from('c\r\nd\n\n'), e.subarray(0, 1)]));
    s.push(Buffer.concat([e.subarray(1), Buffer.from('\n')]));
    expect(got).toEqual(['abc', 'd', '', 'é']);
    s.push(Buffer.from('123456789'));
    s.push(Buffer.from('\nmore\n'));
    expect(tooLong).toBe(1);
    expect(got).toHaveLength(4);
  });
});
