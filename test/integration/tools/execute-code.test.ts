// execute_code on the bubblewrap backend: a Python script in the session's sandbox calling tools
// through hermes_tools over the sandbox's line channel — the same tools, guard and workspace as the
// model's own calls — with only its printed output returned, within its limits (tool calls,
// output bytes, time), and without environment variables that look like secrets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeCodeTool, ProcessRegistry, runTool, sandboxTools, type Tool, type ToolContext } from '../../../services/agent/index.js';
import { MAX_REFUSED_PAST_LIMIT, MAX_WAITING_REQUESTS } from '../../../services/agent/tools/code/rpc.js';
import type { SessionSandbox } from '../../../services/sandbox/index.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';
import { recordingGuard, toolContext } from './helpers.js';

let box: TestSessionSandbox;
const processes = new ProcessRegistry();
const tools = new Map<string, Tool>(sandboxTools(processes).map((t) => [t.name, t]));

beforeAll(async () => { box = await testSessionSandbox(); });
afterAll(async () => { processes.close(); await box?.cleanup(); });

interface CodeResult { status: string; output: string; tool_calls_made: number; exit_code: number; truncated?: boolean; reason?: string }

async function execute(code: string, over: Partial<ToolContext> = {}): Promise<CodeResult> {
  const ctx = toolContext({ sandbox: box, guard: recordingGuard(), tools, ...over });
  const out = await runTool(tools, { id: 'c', name: 'execute_code', arguments: JSON.stringify({ code }) }, ctx);
  return JSON.parse(out.content) as CodeResult;
}

describe('execute_code (bubblewrap)', () => {
  it('runs tools for the script through the turn\'s guard and returns only what it prints', async () => {
    const guard = recordingGuard((c) => c.includes('forbidden'));
    const r = await execute([
      'from hermes_tools import write_file, read_file, terminal',
      'w = write_file("data/n.txt", "one\\ntwo\\nthree\\n")',
      'lines = read_file("data/n.txt")["content"].splitlines()',
      't = terminal("wc -l < data/n.txt")',
      'd = terminal("echo forbidden")',
      'print("lines", len(lines), "wc", t["output"].strip(), "exit", t["exit_code"])',
      'print("denied", d["status"])',
    ].join('\n'), { guard });
    expect(r).toMatchObject({ status: 'success', exit_code: 0, tool_calls_made: 4 });
    expect(r.output).toBe('lines 3 wc 3 exit 0\ndenied blocked\n');
    expect(guard.asked).toEqual(['wc -l < data/n.txt', 'echo forbidden']);
    expect(await import('node:fs/promises').then((fs) => fs.readFile(`${box.root}/data/n.txt`, 'utf8'))).toBe('one\ntwo\nthree\n');
  });

  it('offers only the whitelisted tools of the turn, terminal in the foreground only', async () => {
    const r = await execute([
      'import hermes_tools',
      'print(sorted(n for n in hermes_tools.__all__ if n != "ToolError"))',
      'for call in (lambda: hermes_tools.terminal("sleep 1", background=True), lambda: hermes_tools._call("process", {"action": "list"}), lambda: hermes_tools._call("web_search", {"query": "x"})):',
      '    try:',
      '        call()',
      '    except hermes_tools.ToolError as e:',
      '        print("refused:", e)',
    ].join('\n'));
    expect(r.status).toBe('success');
    const [names, ...refusals] = r.output.trim().split('\n');
    expect(names).toBe("['patch', 'read_file', 'search_files', 'terminal', 'write_file']");
    expect(refusals).toHaveLength(3);
    expect(refusals[0]).toContain('does not take background');
    expect(refusals[1]).toContain('process cannot be called from a script here');
    expect(refusals[2]).toContain('web_search cannot be called from a script here');
  });

  it('refuses tool calls past the limit', async () => {
    const r = await execute([
      'from hermes_tools import read_file, ToolError',
      'ok = 0',
      'for i in range(6):',
      '    try:',
      '        read_file("nothing-here.txt"); ok += 1',
      '    except ToolError as e:',
      '        print("call", i + 1, "refused:", e)',
      'print("answered", ok)',
    ].join('\n'), { codeExecution: { maxToolCalls: 4 } });
    expect(r.status).toBe('success');
    expect(r.tool_calls_made).toBe(4);
    expect(r.output).toContain('call 5 refused: the limit of 4 tool calls per script was reached');
    expect(r.output).toContain('call 6 refused');
    expect(r.output).toContain('answered 4\n');
  });

  it('cuts the output at maxOutputBytes', async () => {
    const r = await execute('import sys\nprint("é" * 5000)\nprint("x" * 5000, file=sys.stderr)', { codeExecution: { maxOutputBytes: 2_000 } });
    expect(r.status).toBe('success');
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(r.output, 'utf8')).toBeLessThanOrEqual(2_000);
    expect(r.output).not.toContain('\uFFFD');
  });

  // Through the message API, 1 000 printed lines under maxOutputBytes 2 000 came back without
  // their last lines and with two markers: the sandbox kept head and tail, then the byte cap cut
  // that again from the front.
  it('keeps the head and the end of the output under maxOutputBytes, with one marker', async () => {
    const r = await execute('for i in range(1000):\n    print("line %04d" % i)\nraise SystemExit("the last words")', { codeExecution: { maxOutputBytes: 2_000 } });
    expect(r.status).toBe('error');
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(r.output, 'utf8')).toBeLessThanOrEqual(2_000);
    expect(r.output.startsWith('line 0000\nline 0001\n')).toBe(true);
    expect(r.output).toContain('line 0999\nthe last words');
    expect(r.output.match(/output cut|characters cut/g)).toHaveLength(1);
  });

  it('kills a script at its time limit', async () => {
    const r = await execute('while True:\n    pass', { codeExecution: { timeoutSeconds: 1 } });
    expect(r.status).toBe('timeout');
    expect(r.reason).toContain('1 s limit');
  });

  it('reports a failing script with its traceback', async () => {
    const r = await execute('print("before")\nraise ValueError("bad input")');
    expect(r).toMatchObject({ status: 'error', exit_code: 1 });
    expect(r.output).toContain('before\n');
    expect(r.output).toContain('ValueError: bad input');
    expect(r.output).not.toContain('hermes_tools._connect');
  });

  it('never lets variables that look like secrets reach the script', async () => {
    const env = { API_KEY: 'k', GITHUB_TOKEN: 't', DB_PASSWORD: 'p', AWS_SECRET_ACCESS_KEY: 's', GCP_CREDENTIALS: 'c', HTTP_AUTH: 'a', Private_Key_File: 'f', PLAIN_SETTING: 'visible' };
    // As if the sandbox's environment carried them (an image's ENV, a passed-through variable).
    const leaky: SessionSandbox = { ...box, open: (cmd, signal) => box.open!({ ...cmd, env: { ...cmd.env, ...env } }, signal) };
    const r2 = await execute([
      'import os',
      `names = ${JSON.stringify(Object.keys(env))}`,
      'print(sorted(n for n in names if n in os.environ))',
      // The process's initial environment block, which deleting from os.environ leaves as it was.
      'print(sorted(e.split(b"=")[0].decode() for e in open("/proc/self/environ", "rb").read().split(b"\\0") if e.split(b"=")[0].decode() in names))',
    ].join('\n'), { sandbox: leaky });
    expect(r2.status).toBe('success');
    expect(r2.output).toBe("['PLAIN_SETTING']\n['PLAIN_SETTING']\n");
  });

  it('lets the script start no program: its commands go through terminal and the guard', async () => {
    // A Profile's deny glob (or manual approval of rm -rf) must hold for a script as for the model:
    // subprocess, os.system, a fork's exec and posix_spawn are refused by the kernel, while
    // hermes_tools.terminal still runs what the guard allows.
    const guard = recordingGuard((c) => c.startsWith('git push'));
    await import('node:fs/promises').then((fs) => fs.writeFile(`${box.root}/keep.txt`, 'kept'));
    const r = await execute([
      'import os, subprocess',
      'from hermes_tools import terminal',
      'for name, run in [',
      '    ("subprocess", lambda: subprocess.run(["git", "push", "origin", "main"])),',
      '    ("shell", lambda: subprocess.run("rm -f /workspace/keep.txt", shell=True)),',
      '    ("spawn", lambda: os.posix_spawn("/bin/rm", ["rm", "-f", "/workspace/keep.txt"], {})),',
      '    ("execv", lambda: os.execv("/bin/rm", ["rm", "-f", "/workspace/keep.txt"])),',
      ']:',
      '    try:',
      '        run()',
      '        print(name, "ran")',
      '    except OSError as e:',
      '        print(name, "refused", e.errno)',
      'print("system", os.system("rm -f /workspace/keep.txt") >> 8)',
      'pid = os.fork()',
      'if pid == 0:',
      '    try:',
      '        os.execv("/bin/rm", ["rm", "-f", "/workspace/keep.txt"])',
      '    finally:',
      '        os._exit(9)',
      'print("fork", os.waitpid(pid, 0)[1] >> 8)',
      'print("terminal", terminal("echo via the guard")["output"].strip(), terminal("git push origin main")["status"])',
    ].join('\n'), { guard });
    expect(r.status).toBe('success');
    expect(r.output).toBe('subprocess refused 1\nshell refused 1\nspawn refused 1\nexecv refused 1\nsystem 127\nfork 9\nterminal via the guard blocked\n');
    expect(guard.asked).toEqual(['echo via the guard', 'git push origin main']);
    expect(await import('node:fs/promises').then((fs) => fs.readFile(`${box.root}/keep.txt`, 'utf8'))).toBe('kept');
  });

  it('ends a script that floods the channel instead of reading its answers', async () => {
    // 3 million such lines took a hermes dev worker from 270 MB to 970 MB (every line waited in the
    // worker's answer chain, every answer in the unread pipe): memory every session shares.
    const flood = await execute([
      'import hermes_tools, time',
      'rf, wf = hermes_tools._io',
      'for i in range(20000):',
      '    wf.write(\'{"id": %d, "tool": "read_file", "args": {"path": "x"}}\\n\' % i)',
      'wf.flush()',
      'print("flooded")',
      'time.sleep(30)',
    ].join('\n'));
    expect(flood.status).toBe('error');
    expect(flood.reason).toContain('without reading the answers');
    expect(flood.tool_calls_made).toBeLessThanOrEqual(MAX_WAITING_REQUESTS + 1);
    const loop = await execute([
      'from hermes_tools import read_file, ToolError',
      'refused = 0',
      'while True:',
      '    try:',
      '        read_file("x.txt")',
      '    except ToolError:',
      '        refused += 1',
    ].join('\n'), { codeExecution: { maxToolCalls: 2 } });
    expect(loop).toMatchObject({ status: 'error', tool_calls_made: 2 });
    expect(loop.reason).toContain(`kept calling tools after the limit of 2 (${MAX_REFUSED_PAST_LIMIT} more calls refused)`);
  });

  it('says so when the sandbox has no channel', async () => {
    const { open: _open, ...noChannel } = box;
    const out = await executeCodeTool.handler({ code: 'print(1)' }, toolContext({ sandbox: noChannel as SessionSandbox, tools }));
    expect(JSON.parse(out)).toMatchObject({ error: expect.stringContaining('no channel') as unknown });
  });
});
