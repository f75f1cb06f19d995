// The bubblewrap backend on real bwrap: commands, exit codes, stdin, cwd, env, the output cap,
// timeout, abort, background commands, close(), the per-session workspace and degraded results.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/core/index.js';
import { bubblewrapSandbox, bubblewrapSandboxFromConfig, workspaceDir } from '../../../services/sandbox/index.js';
import { leftovers, request, session, tempRoot, waitFor } from './bubblewrap-helpers.js';

const root = tempRoot();
const sandbox = bubblewrapSandbox({ workspacesDir: root.dir });
afterAll(async () => {
  await sandbox.close();
  root.remove();
});

describe('bubblewrap backend: commands', () => {
  it('runs a command and reports its output and exit code', async () => {
    const r = await sandbox.exec(request({ command: 'echo hello; echo oops >&2; exit 3' }));
    expect(r).toMatchObject({ status: 'ok', exitCode: 3, truncated: false, output: 'hello\noops\n' });
    expect(r.reason).toBeUndefined();
  });

  it('feeds stdin, honours cwd under /workspace and sets the request env', async () => {
    const s = session();
    await sandbox.exec(request({ session: s, command: 'mkdir -p sub/dir' }));
    const r = await sandbox.exec(request({ session: s, command: 'pwd; echo "$GREETING"; echo "$HOME"; cat', cwd: '/workspace/sub/dir', env: { GREETING: 'hi there' }, stdin: 'from stdin' }));
    expect(r).toMatchObject({ status: 'ok', exitCode: 0, output: '/workspace/sub/dir\nhi there\n/workspace\nfrom stdin' });
  });

  it('answers 128+n for a command killed by signal n', async () => {
    const r = await sandbox.exec(request({ command: 'kill -9 $$' }));
    expect(r).toMatchObject({ status: 'ok', exitCode: 137 });
  });

  it('a missing cwd is the command\'s own failure; a cwd outside /workspace is refused', async () => {
    const missing = await sandbox.exec(request({ command: 'echo never', cwd: '/workspace/nope' }));
    expect(missing.status).toBe('ok');
    expect(missing.exitCode).not.toBe(0);
    expect(missing.output).toMatch(/can't cd|No such file/);
    for (const cwd of ['/etc', '/workspace/../etc', 'workspace', '/workspacex']) {
      const r = await sandbox.exec(request({ command: 'echo never', cwd }));
      expect(r, cwd).toMatchObject({ status: 'degraded', exitCode: -1, output: '' });
      expect(r.reason).toMatch(/outside \/workspace/);
    }
  });

  it('refuses invalid env names and NUL bytes without running anything', async () => {
    expect((await sandbox.exec(request({ command: 'true', env: { 'A-B': 'x' } }))).reason).toMatch(/name "A-B" is invalid/);
    expect((await sandbox.exec(request({ command: 'echo a\0b' }))).reason).toMatch(/NUL byte/);
  });

  it('caps the output, keeping head and tail, and says it was truncated', async () => {
    const r = await sandbox.exec(request({ command: 'echo FIRST; seq 1 100000; echo LAST', maxOutputChars: 1_000 }));
    expect(r.status).toBe('ok');
    expect(r.truncated).toBe(true);
    expect(r.output.startsWith('FIRST\n')).toBe(true);
    expect(r.output.endsWith('LAST\n')).toBe(true);
    expect(r.output.length).toBeLessThan(1_100);
    expect(r.output).toMatch(/characters cut/);
  });
});

describe('bubblewrap backend: ending commands', () => {
  it('kills a command at its timeout and answers timeout', async () => {
    const r = await sandbox.exec(request({ command: 'echo started; sleep 60', timeoutMs: 500 }));
    expect(r).toMatchObject({ status: 'timeout', exitCode: 143, output: 'started\n' });
    expect(r.reason).toMatch(/limit/);
    expect(leftovers()).toEqual([]);
  });

  it('SIGKILLs a command that ignores SIGTERM one second later', async () => {
    const r = await sandbox.exec(request({ command: "trap '' TERM; echo ignoring; sleep 60; echo survived", timeoutMs: 500 }));
    expect(r.status).toBe('timeout');
    expect(r.exitCode).toBe(137);
    expect(r.output).not.toMatch(/survived/);
    expect(leftovers()).toEqual([]);
  });

  it('an aborted call answers interrupted, with the whole tree gone', async () => {
    const s = session();
    const ac = new AbortController();
    const marker = join(workspaceDir(root.dir, s), 'started');
    const pending = sandbox.exec(request({ session: s, signal: ac.signal, command: '(sleep 60; echo child) & (sleep 60) & touch started; wait' }));
    await waitFor('the command to start', () => existsSync(marker));
    ac.abort();
    const r = await pending;
    expect(r).toMatchObject({ status: 'interrupted', exitCode: 143 });
    expect(leftovers()).toEqual([]);
  });

  it('a call whose signal is already aborted does not start', async () => {
    const ac = new AbortController();
    ac.abort();
    const r = await sandbox.exec(request({ signal: ac.signal, command: 'touch /workspace/ran' }));
    expect(r.status).toBe('interrupted');
    expect(existsSync(join(workspaceDir(root.dir, session('s-default')), 'ran'))).toBe(false);
  });

  it('background commands: rolling output while running, kill() ends them', async () => {
    const running = await sandbox.start(request({ command: 'i=0; while true; do i=$((i+1)); echo line $i; sleep 0.01; done', maxOutputChars: 200 }));
    await waitFor('rolling output', () => running.output().truncated);
    const { text } = running.output();
    expect(text.length).toBeLessThanOrEqual(200);
    expect(text).not.toMatch(/^line 1\n/);
    running.kill();
    const r = await running.done;
    expect(r.status).toBe('interrupted');
    expect(leftovers()).toEqual([]);
  });

  it('a background command that ends by itself settles done with its exit code', async () => {
    const running = await sandbox.start(request({ command: 'echo bye; exit 4' }));
    await expect(running.done).resolves.toMatchObject({ status: 'ok', exitCode: 4, output: 'bye\n' });
  });

  it('close() ends everything still running and refuses later calls', async () => {
    const own = bubblewrapSandbox({ workspacesDir: root.dir });
    const a = await own.start(request({ command: 'sleep 60' }));
    const b = await own.start(request({ command: 'sleep 60 & sleep 60' }));
    await own.close();
    expect((await a.done).status).toBe('interrupted');
    expect((await b.done).status).toBe('interrupted');
    expect(leftovers()).toEqual([]);
    expect((await own.exec(request({ command: 'true' }))).status).toBe('degraded');
  });
});

describe('bubblewrap backend: worker death', () => {
  const sleepers = (marker: string) => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8') === `sleep\0${marker}\0`;
    } catch {
      return false;
    }
  });

  it('a worker killed with SIGKILL leaves no sandboxed process behind (--die-with-parent)', async () => {
    const marker = `${600 + Math.floor(Math.random() * 1000)}.${process.pid}`;
    const fixture = fileURLToPath(new URL('./fixtures/hold-sandbox.ts', import.meta.url));
    const worker = spawn(process.execPath, ['--import', 'tsx', fixture, root.dir, marker], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      worker.stdout.on('data', (c: Buffer) => { if (c.toString().includes('started')) resolve(); });
      worker.on('exit', (code) => reject(new Error(`the fixture exited ${code}`)));
    });
    await waitFor('both sleeps to run', () => sleepers(marker).length === 2);
    worker.kill('SIGKILL');
    await waitFor('the sandbox to die with its worker', () => sleepers(marker).length === 0);
  });
});

describe('bubblewrap backend: workspaces', () => {
  it('keeps a session\'s files across calls and separates sessions', async () => {
    const a = session();
    const b = session();
    await sandbox.exec(request({ session: a, command: 'echo kept > notes.txt' }));
    expect((await sandbox.exec(request({ session: a, command: 'cat /workspace/notes.txt' }))).output).toBe('kept\n');
    const other = await sandbox.exec(request({ session: b, command: 'ls -A /workspace; cat notes.txt' }));
    expect(other.exitCode).not.toBe(0);
    expect(other.output).toMatch(/No such file/);
    const dir = workspaceDir(root.dir, a);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('kept\n');
    const st = statSync(dir);
    expect(st.mode & 0o777).toBe(0o700);
    if (process.getuid?.() === 0) expect(st.uid).toBe(65534);
    await sandbox.exec(request({ session: a, command: 'chmod 777 /workspace' }));
    expect(statSync(dir).mode & 0o777).toBe(0o777);
    await sandbox.exec(request({ session: a, command: 'true' }));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('refuses session names that would leave the workspaces root', async () => {
    for (const bad of [{ sessionId: '../../etc' }, { agent: '..' }, { namespace: 'a/b' }, { sessionId: '' }]) {
      const r = await sandbox.exec(request({ session: { ...session(), ...bad }, command: 'true' }));
      expect(r.status, JSON.stringify(bad)).toBe('degraded');
      expect(r.reason).toMatch(/invalid sandbox session/);
    }
    expect(() => workspaceDir(root.dir, { ...session(), sessionId: '..' })).toThrow(/not an id/);
  });
});

describe('bubblewrap backend: degraded', () => {
  it('bwrap missing → degraded, -1, a reason with what to do', async () => {
    const sb = bubblewrapSandbox({ workspacesDir: root.dir, bwrap: '/nonexistent/bwrap' });
    const r = await sb.exec(request({ command: 'echo hi' }));
    expect(r).toMatchObject({ status: 'degraded', exitCode: -1, output: '' });
    expect(r.reason).toMatch(/not installed.*apt-get install -y bubblewrap/);
    const bg = await sb.start(request({ command: 'echo hi' }));
    await expect(bg.done).resolves.toMatchObject({ status: 'degraded', exitCode: -1 });
  });

  it('bwrap failing to set up → degraded with its message, even if it exits 1 like a command', async () => {
    const fake = join(root.dir, 'fake-bwrap');
    writeFileSync(fake, '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n');
    chmodSync(fake, 0o755);
    const r = await bubblewrapSandbox({ workspacesDir: root.dir, bwrap: fake }).exec(request({ command: 'exit 1' }));
    expect(r).toMatchObject({ status: 'degraded', exitCode: -1 });
    expect(r.reason).toMatch(/could not set up the sandbox.*: bwrap: setting up uid map: Permission denied/);
  });

  it('a workspaces root the sandbox cannot reach → degraded with the setting to change', async () => {
    const closed = join(root.dir, 'closed');
    // A worker running as root runs commands as the sandbox uid (65534), which cannot pass a
    // folder of root's that is 0700; a worker of another uid runs them as itself, and cannot make
    // the workspace in a folder it may not write. Each case is the one this process can meet.
    const asRoot = process.getuid?.() === 0;
    mkdirSync(closed, { mode: asRoot ? 0o700 : 0o500 });
    const r = await bubblewrapSandbox({ workspacesDir: join(closed, 'ws') }).exec(request({ command: 'true' }));
    expect(r.status).toBe('degraded');
    expect(r.reason).toMatch(asRoot ? /cannot enter .*closed.*HERMES_WORKSPACES_DIR/ : /closed\/ws could not be prepared \(EACCES.*HERMES_WORKSPACES_DIR/);
  });
});

describe('bubblewrap backend: settings', () => {
  const base = { DATABASE_URL: 'postgres://x@127.0.0.1:1/x', REDIS_URL: 'redis://127.0.0.1:1' };

  it('is built from the config schema (defaults, and the folder it names)', async () => {
    const defaults = loadConfig(base);
    expect(defaults).toMatchObject({ HERMES_WORKSPACES_DIR: '.hermes/workspaces', HERMES_BWRAP_UID: 65534, HERMES_BWRAP_PATH: 'bwrap', HERMES_BWRAP_ALLOWLIST: 'refuse' });
    const sb = bubblewrapSandboxFromConfig(loadConfig({ ...base, HERMES_WORKSPACES_DIR: root.dir }));
    const s = session();
    await sb.exec(request({ session: s, command: 'echo configured > f' }));
    expect(readFileSync(join(workspaceDir(root.dir, s), 'f'), 'utf8')).toBe('configured\n');
  });

  it('refuses uid 0 and an unknown allowlist meaning', () => {
    expect(() => loadConfig({ ...base, HERMES_BWRAP_UID: '0' })).toThrow(/HERMES_BWRAP_UID/);
    expect(() => loadConfig({ ...base, HERMES_BWRAP_ALLOWLIST: 'filter' })).toThrow(/HERMES_BWRAP_ALLOWLIST/);
  });
});
