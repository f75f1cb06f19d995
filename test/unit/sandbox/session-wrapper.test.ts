// The wrapper shell of mode session (services/sandbox/agent-sandbox/pod-exec.ts), run by the real
// /bin/sh on this machine with its state folder and workspace in a temporary folder: the working
// directory a command ends in is the next command's (kept on the workspace, so a new Pod's empty
// /tmp loses nothing), an explicit cwd is neither used nor kept for later, stdin reaches the command, the exit code is the command's, the deadline kills the
// whole process group, and the killer ends a running call's tree.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killer, SESSION_CWD_DIR, wrapper } from '../../../services/sandbox/agent-sandbox/pod-exec.js';

const root = mkdtempSync(join(tmpdir(), 'hermes-session-wrapper-'));
const state = join(root, 'state');
const workspace = join(root, 'workspace');
mkdirSync(workspace);
afterAll(() => rmSync(root, { recursive: true, force: true }));

function sh(script: string, args: string[], stdin = ''): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', script, 'hermes', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => { out += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { out += b.toString(); });
    // A script that exits before reading (the killer) closes its stdin: the write then fails with
    // EPIPE, which is no test failure.
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
    child.on('close', (code) => resolve({ code, out }));
  });
}

const run = (id: string, command: string, opts: { cwd?: string; timeout?: number; stdin?: string } = {}) =>
  sh(wrapper(state, workspace), [id, opts.cwd ?? '', String(opts.timeout ?? 30), command], opts.stdin);

/** Running (a killed process whose parent died may stay a zombie until init reaps it: not alive). */
const alive = (pid: number): boolean => {
  try { return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; }
};

describe('the session wrapper', () => {
  it('starts in the workspace, then where the last command without a cwd left off', async () => {
    expect((await run('a', 'pwd')).out.trim()).toBe(workspace);
    expect((await run('b', 'mkdir -p sub/deeper && cd sub/deeper')).code).toBe(0);
    expect((await run('c', 'pwd')).out.trim()).toBe(join(workspace, 'sub/deeper'));
    // An explicit cwd runs there and is not remembered.
    expect((await run('d', 'pwd; cd /', { cwd: workspace })).out.trim()).toBe(workspace);
    expect((await run('e', 'pwd')).out.trim()).toBe(join(workspace, 'sub/deeper'));
    // A command that exits still leaves its directory.
    expect((await run('f', 'cd .. && exit 3')).code).toBe(3);
    expect((await run('g', 'pwd')).out.trim()).toBe(join(workspace, 'sub'));
    // A resume is a new Pod with an empty /tmp on the same workspace volume: the folder is kept there.
    rmSync(state, { recursive: true, force: true });
    expect((await run('g2', 'pwd')).out.trim()).toBe(join(workspace, 'sub'));
    expect(readFileSync(join(workspace, SESSION_CWD_DIR, 'cwd'), 'utf8').trim()).toBe(join(workspace, 'sub'));
    // A remembered folder that is gone falls back to the workspace.
    rmSync(join(workspace, 'sub'), { recursive: true });
    expect((await run('h', 'pwd')).out.trim()).toBe(workspace);
  });

  it('passes stdin, stdout, stderr and the exit code through; the command text is never spliced', async () => {
    const r = await run('i', 'read line; echo "got $line"; echo oops >&2; exit 7', { stdin: 'hello\n' });
    expect(r.code).toBe(7);
    expect(r.out).toContain('got hello');
    expect(r.out).toContain('oops');
    const quoted = await run('j', `echo '$2 "$3"' ; echo done`);
    expect(quoted.out).toContain('$2 "$3"');
  });

  it('refuses a cwd that does not exist, without running the command', async () => {
    const r = await run('k', 'echo ran', { cwd: join(workspace, 'missing') });
    expect(r.code).toBe(1);
    expect(r.out).not.toContain('ran');
  });

  it('kills the whole process group at the deadline', async () => {
    const pidFile = join(root, 'child.pid');
    const r = await run('l', `sleep 60 & echo $! > ${pidFile}; wait`, { timeout: 1 });
    expect(r.code).toBe(137);
    const child = Number(readFileSync(pidFile, 'utf8'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(alive(child)).toBe(false);
  });

  it('the killer ends a running call and its children', async () => {
    const pidFile = join(root, 'killed.pid');
    const running = run('m', `sleep 60 & echo $! > ${pidFile}; wait`);
    for (let i = 0; i < 200 && !(existsSync(pidFile) && existsSync(join(state, 'm.pid'))); i++) await new Promise((r) => setTimeout(r, 25));
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
    await sh(killer(state), ['m']);
    const r = await running;
    expect(r.code).not.toBe(0);
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
    // Killing a call that is over does nothing and succeeds.
    expect((await sh(killer(state), ['m'])).code).toBe(0);
  });
});
