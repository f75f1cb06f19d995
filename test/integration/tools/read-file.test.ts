// read_file through a real sandbox: pages with line numbers, Hermes' caps, and every refusal —
// escapes, credentials and symlinks out are refused, and path refusals run no command at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileTool, NEVER_SPILLS } from '../../../services/agent/index.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';
import { call, callJson, toolContext } from './helpers.js';

let box: TestSessionSandbox;
const ctx = () => toolContext({ sandbox: box });

beforeAll(async () => {
  box = await testSessionSandbox();
  await box.put('ten.txt', Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
  await box.mkdir('src');
  await box.put('src/a.ts', 'export const a = 1;\n');
  await box.put('bin.dat', Buffer.from([1, 2, 0, 3]));
  await box.put('long.txt', `${'x'.repeat(5_000)}\nshort\n`);
  await box.put('wide.txt', Array.from({ length: 200 }, () => 'y'.repeat(1_000)).join('\n'));
  await box.put('empty.txt', '');
  await box.put('tail.txt', 'a\nb');
  await box.mkdir('.ssh');
  await box.put('.ssh/id_ed25519', 'PRIVATE KEY');
  await box.put('.env', 'API_KEY=sk-secret');
  await box.symlink('/etc/hostname', 'host-link');
  await box.symlink('.env', 'notes.txt');
  await box.symlink('src', 'code');
});
afterAll(() => box?.cleanup());

describe('read_file', () => {
  it('returns a page with right-aligned line numbers, the totals and how to continue', async () => {
    const r = await callJson(readFileTool, { path: 'ten.txt', offset: 3, limit: 4 }, ctx());
    expect(r.content).toBe(['     3|line 3', '     4|line 4', '     5|line 5', '     6|line 6'].join('\n'));
    expect(r).toMatchObject({ path: '/workspace/ten.txt', total_lines: 10, truncated: true, hint: expect.stringContaining('offset=7') });
    expect(await callJson(readFileTool, { path: 'ten.txt', offset: 0, limit: 99_999 }, ctx())).toMatchObject({ total_lines: 10, truncated: false, content: expect.stringMatching(/^ {5}1\|line 1\n/) });
    const rest = await callJson(readFileTool, { path: '/workspace/ten.txt', offset: 7 }, ctx());
    expect(rest).toMatchObject({ total_lines: 10, truncated: false });
    expect(String(rest.content).split('\n')).toHaveLength(4);
  });

  it('reads an empty file and a last line without a newline', async () => {
    expect(await callJson(readFileTool, { path: 'empty.txt' }, ctx())).toMatchObject({ content: '', total_lines: 0, file_size: 0, truncated: false });
    expect(await callJson(readFileTool, { path: 'tail.txt' }, ctx())).toMatchObject({ content: '     1|a\n     2|b', total_lines: 2, file_size: 3 });
  });

  it('takes ~, relative and absolute paths, and follows symlinks that stay inside', async () => {
    for (const path of ['~/src/a.ts', 'src/a.ts', '/workspace/src/./x/../a.ts', 'code/a.ts']) {
      const r = await callJson(readFileTool, { path }, ctx());
      expect(r.content, path).toBe('     1|export const a = 1;');
    }
  });

  it('cuts lines at 2 000 characters and refuses a page over 100 000 characters', async () => {
    const long = await callJson(readFileTool, { path: 'long.txt' }, ctx());
    expect(String(long.content).split('\n')[0]).toBe(`     1|${'x'.repeat(2_000)}... [truncated]`);
    expect(long.truncated_lines).toBe(true);
    const wide = await call(readFileTool, { path: 'wide.txt' }, ctx());
    expect(wide.kind).toBe('failed');
    expect(wide.content).toMatch(/more than 100,000 characters; read a narrower range/);
    expect((await callJson(readFileTool, { path: 'wide.txt', limit: 50 }, ctx())).total_lines).toBe(200);
  });

  it('never spills (its results are only cut)', () => {
    expect(NEVER_SPILLS.has('read_file')).toBe(true);
  });

  it('says what is wrong with files it cannot read', async () => {
    expect((await callJson(readFileTool, { path: 'missing.txt' }, ctx())).error).toBe('File not found: /workspace/missing.txt');
    expect((await callJson(readFileTool, { path: 'src' }, ctx())).error).toMatch(/is a directory/);
    expect((await callJson(readFileTool, { path: 'bin.dat' }, ctx())).error).toMatch(/binary file/);
  });

  it('refuses escapes and credentials before running anything', async () => {
    const before = box.calls.length;
    const refusals: [string, RegExp][] = [
      ['../etc/passwd', /outside \/workspace/], ['/etc/passwd', /outside \/workspace/], ['src/../../etc/shadow', /outside \/workspace/],
      ['~root/.bashrc', /another user's home/], ['~/.ssh/id_ed25519', /write-protected.*\.ssh/], ['.env', /write-protected.*\.env/],
      ['deploy/.aws/credentials', /\.aws/], ['.env.production', /\.env\.production/], ['a\u0000b', /NUL/],
    ];
    for (const [path, why] of refusals) expect(String((await callJson(readFileTool, { path }, ctx())).error), path).toMatch(why);
    expect(box.calls.length).toBe(before);
  });

  it('refuses symlinks that lead outside /workspace or onto a credential', async () => {
    expect(String((await callJson(readFileTool, { path: 'host-link' }, ctx())).error)).toMatch(/symbolic link that leads outside \/workspace/);
    const viaLink = await callJson(readFileTool, { path: 'notes.txt' }, ctx());
    expect(String(viaLink.error)).toMatch(/write-protected.*symbolic link/);
    expect(JSON.stringify(viaLink)).not.toContain('sk-secret');
  });

  it('reports a sandbox that cannot run its script as degraded, with the retry hint', async () => {
    const broken = await testSessionSandbox({ unavailable: true });
    try {
      const r = await callJson(readFileTool, { path: 'ten.txt' }, toolContext({ sandbox: broken }));
      expect(r).toMatchObject({ status: 'degraded', exit_code: -1, hint: 'the command may not have run; retry later' });
      expect(String(r.error)).toMatch(/^read_file: sandbox degraded/);
    } finally {
      await broken.cleanup();
    }
  });

  it('answers with an error when the agent has no sandbox', async () => {
    const r = await call(readFileTool, { path: 'ten.txt' }, toolContext());
    expect(r.kind).toBe('failed');
    expect(r.content).toMatch(/No sandbox is configured/);
  });
});
