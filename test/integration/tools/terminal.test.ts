// terminal through a real sandbox: output and exit codes, the guard in front of every command
// (a denied command runs nothing), the working directory, and the sandbox's statuses (timeout,
// interrupted, degraded) reported as such.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEGRADED_HINT, ProcessRegistry, terminalTool, type ToolContext } from '../../../services/agent/index.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';
import { eventually } from '../../support/services.js';
import { call, callJson, recordingGuard, toolContext } from './helpers.js';

let box: TestSessionSandbox;
const processes = new ProcessRegistry();
const terminal = terminalTool(processes);
const ctx = (over: Partial<ToolContext> = {}) => toolContext({ sandbox: box, guard: recordingGuard(), ...over });

beforeAll(async () => {
  box = await testSessionSandbox();
  await box.mkdir('sub');
});
afterAll(async () => {
  processes.close();
  await box?.cleanup();
});

describe('terminal', () => {
  it('runs a command and returns its output and exit code', async () => {
    const ok = await callJson(terminal, { command: 'echo out; sleep 0.1; echo err >&2' }, ctx());
    expect(ok).toMatchObject({ exit_code: 0, error: null, output: 'out\nerr\n' });
    const failing = await call(terminal, { command: 'exit 3' }, ctx());
    expect(JSON.parse(failing.content)).toMatchObject({ exit_code: 3 });
    expect(terminal.terminalLike).toBe(true);
  });

  it('runs in workdir, and refuses one outside /workspace', async () => {
    const r = await callJson(terminal, { command: 'basename "$PWD"', workdir: 'sub' }, ctx());
    expect(r.output).toBe('sub\n');
    expect(box.calls.at(-1)?.cwd).toBe('/workspace/sub');
    const before = box.calls.length;
    expect((await callJson(terminal, { command: 'ls', workdir: '/etc' }, ctx())).error).toMatch(/workdir: Refused.*outside \/workspace/);
    expect((await callJson(terminal, { command: 'ls', workdir: '../..' }, ctx())).error).toMatch(/outside/);
    expect(box.calls.length).toBe(before);
  });

  it('asks the guard first; a denied command runs nothing and returns the guard message', async () => {
    const canary = join(box.root, 'ran');
    const guard = recordingGuard((c) => c.includes('touch'));
    const r = await call(terminal, { command: `touch ${canary}` }, ctx({ guard }));
    expect(r.kind).toBe('failed');
    expect(JSON.parse(r.content)).toMatchObject({ exit_code: -1, status: 'blocked', error: `BLOCKED: touch ${canary} was denied. Silence is not consent.` });
    expect(guard.asked).toEqual([`touch ${canary}`]);
    const bg = await callJson(terminal, { command: `touch ${canary}`, background: true }, ctx({ guard }));
    expect(bg.status).toBe('blocked');
    expect(guard.asked).toHaveLength(2);
    expect(existsSync(canary)).toBe(false);
  });

  it('refuses to run without a guard or without a sandbox', async () => {
    const before = box.calls.length;
    expect((await callJson(terminal, { command: 'true' }, toolContext({ sandbox: box }))).error).toMatch(/no approval guard configured/);
    expect((await callJson(terminal, { command: 'true' }, toolContext({ guard: recordingGuard() }))).error).toMatch(/No sandbox is configured/);
    expect(box.calls.length).toBe(before);
  });

  it('refuses a command holding NUL instead of failing in the backend', async () => {
    const before = box.calls.length;
    const guard = recordingGuard();
    expect((await callJson(terminal, { command: 'echo a\u0000; touch x' }, ctx({ guard }))).error).toMatch(/NUL character.*nothing was run/);
    expect(box.calls.length).toBe(before);
    expect(guard.asked).toEqual([]);
  });

  it('refuses a foreground timeout over 600 s, pointing to background', async () => {
    const r = await callJson(terminal, { command: 'true', timeout: 601 }, ctx());
    expect(r.error).toMatch(/over the foreground maximum of 600 s; run it with background=true/);
  });

  it('reports a timeout with its status and reason', async () => {
    const r = await callJson(terminal, { command: 'echo started; sleep 30', timeout: 1 }, ctx());
    expect(r).toMatchObject({ status: 'timeout', output: 'started\n' });
    expect(String(r.reason)).toMatch(/1 s limit/);
  });

  it('reports an interrupted command when the turn is stopped (the handler\'s own answer)', async () => {
    const stop = new AbortController();
    // runTool answers a stop at once ("cancelled"); the handler's result, recorded nowhere then, says interrupted.
    const running = Promise.resolve(terminal.handler({ command: 'echo begun; sleep 30' }, ctx({ signal: stop.signal })));
    await eventually(() => box.calls.at(-1)?.command === 'echo begun; sleep 30', 'the command to start');
    stop.abort();
    const r = JSON.parse(await running) as Record<string, unknown>;
    expect(r).toMatchObject({ status: 'interrupted' });
    expect(r.exit_code).not.toBe(0);
  });

  it('reports a backend that cannot run anything as degraded, with the retry hint', async () => {
    const broken = await testSessionSandbox({ unavailable: true });
    try {
      const r = await callJson(terminal, { command: 'echo hi' }, ctx({ sandbox: broken }));
      expect(r).toMatchObject({ status: 'degraded', exit_code: -1, hint: DEGRADED_HINT });
      expect(String(r.error)).toMatch(/the command may not have run; retry later/);
    } finally {
      await broken.cleanup();
    }
  });
});
