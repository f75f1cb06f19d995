// search_files through a real sandbox: content search (lines, files, counts, context, globs),
// file-name search, paging, and what is never searched (credentials, .git, node_modules).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchFilesTool } from '../../../services/agent/index.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';
import { call, callJson, toolContext } from './helpers.js';

let box: TestSessionSandbox;
const ctx = () => toolContext({ sandbox: box });
const put = (rel: string, text: string) => box.put(rel, text);

beforeAll(async () => {
  box = await testSessionSandbox();
  await put('src/a.ts', 'const needle = 1;\nconst other = 2;\nexport { needle };\n');
  await put('src/b.py', 'needle = "py"\n');
  await put('src/dir with space/c.ts', 'x\nneedle: yes\ny\n');
  await put('docs/readme.md', 'no match here\n');
  await put('.env', 'needle=sk-secret\n');
  await put('.ssh/config', 'needle\n');
  await put('.git/HEAD', 'needle\n');
  await put('node_modules/dep/index.js', 'needle\n');
  for (let i = 0; i < 12; i++) await put(`many/f${String(i).padStart(2, '0')}.txt`, 'hit\n');
});
afterAll(() => box?.cleanup());

describe('search_files', () => {
  it('finds matching lines with paths and line numbers, never in credentials, .git or node_modules', async () => {
    const r = await callJson(searchFilesTool, { pattern: 'needle' }, ctx());
    const found = (r.matches as { path: string; line: number; content: string }[]).map((m) => `${m.path}:${m.line}:${m.content}`).sort();
    expect(found).toEqual([
      '/workspace/src/a.ts:1:const needle = 1;', '/workspace/src/a.ts:3:export { needle };',
      '/workspace/src/b.py:1:needle = "py"', '/workspace/src/dir with space/c.ts:2:needle: yes',
    ]);
    expect(r).toMatchObject({ total_count: 4, truncated: false });
    expect(JSON.stringify(r)).not.toContain('sk-secret');
  });

  it('narrows by file_glob and path, and gives files, counts and context', async () => {
    const ts = await callJson(searchFilesTool, { pattern: 'needle', file_glob: '*.ts', output_mode: 'files_only' }, ctx());
    expect((ts.files as string[]).sort()).toEqual(['/workspace/src/a.ts', '/workspace/src/dir with space/c.ts']);
    const counts = await callJson(searchFilesTool, { pattern: 'needle', path: 'src', output_mode: 'count' }, ctx());
    expect(counts.counts).toEqual(expect.arrayContaining([{ path: '/workspace/src/a.ts', count: 2 }, { path: '/workspace/src/b.py', count: 1 }]));
    const ctxLines = await callJson(searchFilesTool, { pattern: 'needle: yes', path: 'src/dir with space', context: 1 }, ctx());
    expect(ctxLines.matches).toEqual([
      { path: '/workspace/src/dir with space/c.ts', line: 1, content: 'x', context: true },
      { path: '/workspace/src/dir with space/c.ts', line: 2, content: 'needle: yes' },
      { path: '/workspace/src/dir with space/c.ts', line: 3, content: 'y', context: true },
    ]);
  });

  it('pages with offset and limit, saying how to continue', async () => {
    const first = await callJson(searchFilesTool, { pattern: 'hit', path: 'many', limit: 5 }, ctx());
    expect(first).toMatchObject({ total_count: 12, truncated: true, hint: expect.stringContaining('offset=5') });
    const last = await callJson(searchFilesTool, { pattern: 'hit', path: 'many', limit: 5, offset: 10 }, ctx());
    expect((last.matches as unknown[]).length).toBe(2);
    expect(last.truncated).toBe(false);
  });

  it('finds files by name glob, sorted, without credentials', async () => {
    const r = await callJson(searchFilesTool, { pattern: '*.ts', target: 'files' }, ctx());
    expect(r.files).toEqual(['/workspace/src/a.ts', '/workspace/src/dir with space/c.ts']);
    const all = await callJson(searchFilesTool, { pattern: '*', target: 'files', limit: 100 }, ctx());
    expect((all.files as string[]).some((f) => /\.env|\.ssh|\.git\/|node_modules/.test(f))).toBe(false);
    expect(all.total_count).toBe(16);
  });

  it('treats hostile patterns as patterns, and reports a bad regex', async () => {
    const canary = join(box.root, 'pwned');
    const r = await callJson(searchFilesTool, { pattern: `'$(touch ${canary})'`, file_glob: `*'; touch ${canary}; '` }, ctx());
    expect(r.total_count).toBe(0);
    const bad = await callJson(searchFilesTool, { pattern: 'a(b' }, ctx());
    expect(bad.error).toMatch(/invalid regular expression/);
    const { existsSync } = await import('node:fs');
    expect(existsSync(canary)).toBe(false);
  });

  it('refuses a pattern too long for a command line as invalid arguments, not as a sandbox failure', async () => {
    const r = await call(searchFilesTool, { pattern: 'a'.repeat(200_000) }, ctx());
    expect(r.kind).toBe('invalid');
    expect(r.content).toMatch(/pattern: Too big/);
    expect(r.content).not.toMatch(/degraded|retry later/);
  });

  it('skips a FIFO instead of hanging on it', async () => {
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [join(box.root, 'src', 'pipe')]);
    const r = await callJson(searchFilesTool, { pattern: 'needle', path: 'src' }, ctx());
    expect(r.total_count).toBe(4);
  });

  it('refuses paths outside /workspace and credential folders', async () => {
    expect((await callJson(searchFilesTool, { pattern: 'root', path: '/etc' }, ctx())).error).toMatch(/outside/);
    expect((await callJson(searchFilesTool, { pattern: 'x', path: '~/.ssh' }, ctx())).error).toMatch(/write-protected/);
    expect((await callJson(searchFilesTool, { pattern: 'x' }, toolContext())).error).toMatch(/No sandbox/);
  });

  // Through the message API, `ln -s / root` then search_files {path: "root/etc"} listed the
  // sandbox's /etc/passwd: the path was checked lexically only, and grep/find follow a link in it.
  it('refuses a path through a symbolic link out of /workspace or onto a credential, follows one inside', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'hermes-outside-'));
    try {
      await writeFile(join(outside, 'secret.txt'), 'needle outside\n');
      await box.symlink(outside, 'out');
      await box.symlink('.ssh', 'keys');
      await box.symlink('src', 'code');
      for (const args of [{ pattern: 'needle', path: 'out' }, { pattern: '*', target: 'files', path: 'out' }, { pattern: 'needle', path: 'out/secret.txt', output_mode: 'count' }]) {
        const r = await callJson(searchFilesTool, args, ctx());
        expect(r.error, JSON.stringify(args)).toMatch(/symbolic link that leads outside \/workspace/);
        expect(JSON.stringify(r)).not.toContain('needle outside');
      }
      expect((await callJson(searchFilesTool, { pattern: 'needle', path: 'keys' }, ctx())).error).toMatch(/write-protected.*symbolic link/);
      const inside = await callJson(searchFilesTool, { pattern: 'needle', path: 'code', output_mode: 'files_only' }, ctx());
      expect((inside.files as string[]).sort()).toEqual(['/workspace/src/a.ts', '/workspace/src/b.py', '/workspace/src/dir with space/c.ts']);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });
});
