// write_file and patch through a real sandbox: content arrives byte for byte (hostile text
// included, nothing in it runs), a checkpoint is taken before every change, patch answers with a
// unified diff, and refusals (escapes, credentials, symlinks out) change nothing anywhere.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patchTool, writeFileTool, type ToolContext } from '../../../services/agent/index.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';
import { call, callJson, toolContext } from './helpers.js';

let box: TestSessionSandbox;
let outside: string;
/** What the checkpoint hook saw: its reason, and the file's content at that moment. */
let checkpoints: { reason: string; before: string | null }[];

const watched = () => join(box.root, 'app.py');
const ctx = (over: Partial<ToolContext> = {}) => toolContext({
  sandbox: box,
  checkpoint: async (reason) => { checkpoints.push({ reason, before: existsSync(watched()) ? await readFile(watched(), 'utf8') : null }); },
  ...over,
});

beforeAll(async () => {
  box = await testSessionSandbox();
  outside = await mkdtemp(join(tmpdir(), 'hermes-outside-'));
  await box.symlink(outside, 'escape');
  await box.symlink(join(outside, 'new.txt'), 'dangling');
  await box.mkdir('cfg');
  await box.put('cfg/.env', 'TOKEN=1');
  await box.symlink('cfg/.env', 'settings');
});
afterAll(async () => {
  await box?.cleanup();
  await rm(outside, { recursive: true, force: true });
});

describe('write_file', () => {
  it('writes hostile content exactly, creating parent folders, after a checkpoint', async () => {
    checkpoints = [];
    const canary = join(box.root, 'pwned');
    const content = `#!/bin/sh\necho "$(touch ${canary})" \`touch ${canary}\` '$HOME' \\\n\ttab\r\nünïcode 🎉\nno newline at end`;
    const r = await callJson(writeFileTool, { path: 'deep/er/script.sh', content }, ctx());
    expect(r).toMatchObject({ path: '/workspace/deep/er/script.sh', created: true, bytes_written: Buffer.byteLength(content) });
    expect(await readFile(join(box.root, 'deep/er/script.sh'), 'utf8')).toBe(content);
    expect(existsSync(canary)).toBe(false);
    expect(checkpoints.map((c) => c.reason)).toEqual(['write_file /workspace/deep/er/script.sh']);
  });

  it('overwrites, and the checkpoint saw the old content', async () => {
    checkpoints = [];
    await box.put('app.py', 'old\n');
    const r = await callJson(writeFileTool, { path: '~/app.py', content: 'new\n' }, ctx());
    expect(r.created).toBe(false);
    expect(checkpoints).toEqual([{ reason: 'write_file /workspace/app.py', before: 'old\n' }]);
    expect(await readFile(watched(), 'utf8')).toBe('new\n');
  });

  it('still writes when the checkpoint fails, and says so', async () => {
    const r = await callJson(writeFileTool, { path: 'c.txt', content: 'x' }, ctx({ checkpoint: () => Promise.reject(new Error('disk full')) }));
    expect(r.checkpoint_warning).toMatch(/disk full/);
    expect(await readFile(join(box.root, 'c.txt'), 'utf8')).toBe('x');
  });

  // Through the message API, write_file onto a FIFO made with mkfifo hung until the command's
  // 20 s limit killed it: `cat > pipe` blocks with no reader. Now it is refused like read_file's.
  it('refuses a FIFO (anything not a regular file) at once, without a checkpoint', async () => {
    checkpoints = [];
    execFileSync('mkfifo', [join(box.root, 'pipe')]);
    const quick = AbortSignal.timeout(5_000);
    const r = await callJson(writeFileTool, { path: 'pipe', content: 'x' }, ctx({ signal: quick }));
    expect(r.error).toMatch(/not a regular file/);
    expect(checkpoints).toEqual([]);
  });

  // Through the message API, write_file {path: "s\ud800.txt"} answered that path while the file
  // made was named "s\uFFFD.txt", and a 5 000-byte path only said "could not write".
  it('refuses a path with a lone surrogate or over PATH_MAX, saying why, and writes nothing', async () => {
    const before = await readdir(box.root);
    expect((await callJson(writeFileTool, { path: 's\ud800.txt', content: 'x' }, ctx())).error).toMatch(/not well-formed Unicode/);
    expect((await callJson(writeFileTool, { path: 'a'.repeat(5_000), content: 'x' }, ctx())).error).toMatch(/5000 bytes long; a path has at most 4096/);
    expect(await readdir(box.root)).toEqual(before);
  });

  it('refuses escapes, credentials and symlinks out, leaving everything as it was', async () => {
    checkpoints = [];
    const cases: [string, RegExp][] = [
      ['../x.txt', /outside \/workspace/], ['/tmp/x.txt', /outside \/workspace/], ['.ssh/authorized_keys', /\.ssh/],
      ['~/.aws/credentials', /\.aws/], ['app/.env', /\.env/], ['.git-credentials', /git-credentials/], ['.docker/config.json', /\.docker/],
      ['escape/planted.txt', /symbolic link that leads outside/], ['dangling', /symbolic link that leads outside/], ['settings', /write-protected.*symbolic link/],
    ];
    for (const [path, why] of cases) {
      const o = await call(writeFileTool, { path, content: 'planted' }, ctx());
      expect(o.kind, path).toBe('failed');
      expect(o.content, path).toMatch(why);
    }
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    expect(await readFile(join(box.root, 'cfg', '.env'), 'utf8')).toBe('TOKEN=1');
    expect(checkpoints).toEqual([]);
  });

  it("refuses read_file's line-numbered display as content", async () => {
    const o = await call(writeFileTool, { path: 'n.txt', content: '     1|a\n     2|b\n     3|c' }, ctx());
    expect(o.content).toMatch(/LINE_NUM/);
    expect(existsSync(join(box.root, 'n.txt'))).toBe(false);
  });

  it('refuses, before any checkpoint, content over what the kubernetes sandbox passes on stdin', async () => {
    const k8s = await testSessionSandbox({ backend: 'kubernetes' });
    try {
      checkpoints = [];
      const r = await callJson(writeFileTool, { path: 'big.txt', content: 'x'.repeat(1_000_001) }, ctx({ sandbox: k8s }));
      expect(r.error).toMatch(/1000001 bytes is more than this sandbox passes to a command.*Write the file in parts/);
      expect(checkpoints).toEqual([]);
      expect(k8s.calls).toEqual([]);
      expect((await callJson(writeFileTool, { path: 'ok.txt', content: 'x'.repeat(1_000_000) }, ctx({ sandbox: k8s }))).bytes_written).toBe(1_000_000);
    } finally {
      await k8s.cleanup();
    }
  });

  it('answers with an error when the agent has no sandbox', async () => {
    expect((await callJson(writeFileTool, { path: 'x', content: 'y' }, toolContext())).error).toMatch(/No sandbox/);
  });
});

describe('patch', () => {
  const src = ['def a():', '    return 1', '', 'def b():', '    return 2', '', 'def c():', '    return 1', ''].join('\n');

  it('replaces a unique string and answers with a unified diff, after a checkpoint', async () => {
    await box.put('app.py', src);
    checkpoints = [];
    const r = await callJson(patchTool, { path: 'app.py', old_string: 'def b():\n    return 2', new_string: 'def b():\n    return 22' }, ctx());
    expect(r).toMatchObject({ success: true, path: '/workspace/app.py', replacements: 1 });
    expect(r.diff).toBe(['--- a/workspace/app.py', '+++ b/workspace/app.py', '@@ -2,7 +2,7 @@', '     return 1', ' ', ' def b():', '-    return 2', '+    return 22', ' ', ' def c():', '     return 1', ''].join('\n'));
    expect(await readFile(watched(), 'utf8')).toBe(src.replace('return 2', 'return 22'));
    expect(checkpoints).toEqual([{ reason: 'patch /workspace/app.py', before: src }]);
  });

  it('refuses an ambiguous match unless replace_all, then replaces every one', async () => {
    await box.put('app.py', src);
    const ambiguous = await callJson(patchTool, { path: 'app.py', old_string: 'return 1', new_string: 'return 0' }, ctx());
    expect(ambiguous.error).toMatch(/occurs 2 times/);
    expect(await readFile(watched(), 'utf8')).toBe(src);
    const all = await callJson(patchTool, { path: 'app.py', old_string: 'return 1', new_string: 'return 0', replace_all: true }, ctx());
    expect(all.replacements).toBe(2);
    expect(String(all.diff).match(/^- {4}return 1$/gm)).toHaveLength(2);
    expect(await readFile(watched(), 'utf8')).toBe(src.replaceAll('return 1', 'return 0'));
  });

  it('takes new_string literally ($& and $1 are not replacement patterns)', async () => {
    await box.put('app.py', 'price\n');
    await callJson(patchTool, { path: 'app.py', old_string: 'price', new_string: "$& $1 $$ '$(x)'" }, ctx());
    expect(await readFile(watched(), 'utf8')).toBe("$& $1 $$ '$(x)'\n");
  });

  it('says when old_string is missing, and points to read_file', async () => {
    await box.put('app.py', src);
    const r = await callJson(patchTool, { path: 'app.py', old_string: 'def z()', new_string: 'x' }, ctx());
    expect(r.error).toMatch(/Could not find old_string/);
    expect(r._hint).toMatch(/read_file/);
  });

  it('refuses V4A mode, credentials, escapes and symlinks out without changing anything', async () => {
    checkpoints = [];
    expect((await callJson(patchTool, { mode: 'patch', patch: '*** Begin Patch' }, ctx())).error).toMatch(/not supported/);
    expect((await callJson(patchTool, { path: '.env', old_string: 'a', new_string: 'b' }, ctx())).error).toMatch(/write-protected/);
    expect((await callJson(patchTool, { path: '../etc/hosts', old_string: 'a', new_string: 'b' }, ctx())).error).toMatch(/outside/);
    expect((await callJson(patchTool, { path: 'settings', old_string: 'TOKEN', new_string: 'X' }, ctx())).error).toMatch(/symbolic link/);
    expect(await readFile(join(box.root, 'cfg', '.env'), 'utf8')).toBe('TOKEN=1');
    expect(checkpoints).toEqual([]);
  });
});
