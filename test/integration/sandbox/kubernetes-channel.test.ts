// The kubernetes backend's line channel (Sandbox.open) and execute_code on it, against a real
// kube-apiserver and the test kubelet: the process runs by pods/exec in a Pod that only waits,
// its stdin and stdout carry the lines, its stderr is the output; the Pod is deleted when it
// ends. execute_code's limits (tool calls, output bytes, time) and its secret scrub hold here as
// in bubblewrap (test/integration/tools/execute-code.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessRegistry, runTool, sandboxTools, type Tool, type ToolContext } from '../../../services/agent/index.js';
import { bindSession, type Sandbox, type SandboxSession, type SessionSandbox } from '../../../services/sandbox/index.js';
import { startSandboxPlane, waitFor, type SandboxPlane } from '../../support/kube/index.js';
import { execRequest, testSession } from '../../support/sandbox-request.js';
import { recordingGuard, toolContext } from '../tools/helpers.js';

interface CodeResult { status: string; output: string; tool_calls_made: number; exit_code: number; truncated?: boolean; reason?: string }

describe('kubernetes sandbox channel and execute_code', () => {
  let plane: SandboxPlane;
  let sandbox: Sandbox;
  let cp: SandboxPlane['cp'];
  const processes = new ProcessRegistry();
  const tools = new Map<string, Tool>(sandboxTools(processes).map((t) => [t.name, t]));

  beforeAll(async () => {
    plane = await startSandboxPlane();
    ({ cp, sandbox } = plane);
  });

  afterAll(async () => {
    processes.close();
    await plane?.stop();
  });

  const sandboxPods = (ns: string): Promise<number> => plane.sandboxPods(ns);

  const boxFor = (session: SandboxSession): SessionSandbox => bindSession(sandbox, {
    session, workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none', allow: [] }, timeoutSeconds: 60, maxOutputChars: 100_000,
  });

  async function execute(box: SessionSandbox, code: string, over: Partial<ToolContext> = {}): Promise<CodeResult> {
    const ctx = toolContext({ sandbox: box, guard: recordingGuard(), tools, ...over });
    const out = await runTool(tools, { id: 'c', name: 'execute_code', arguments: JSON.stringify({ code }) }, ctx);
    return JSON.parse(out.content) as CodeResult;
  }

  it('carries lines both ways over pods/exec, keeps stderr as the output and deletes the Pod at the end', async () => {
    const ns = await cp.createNamespace('chan');
    const lines: string[] = [];
    const channel = await sandbox.open!({
      ...execRequest(testSession(ns), 'while read -r l; do echo "got $l"; echo "log $l" >&2; done; exit 3'),
      onLine: (l) => { lines.push(l); if (lines.length === 2) channel.end(); },
    });
    channel.send('one');
    channel.send('two');
    const r = await channel.done;
    expect(lines).toEqual(['got one', 'got two']);
    expect(r).toMatchObject({ status: 'ok', exitCode: 3 });
    expect(r.output).toBe('log one\nlog two\n');
    await waitFor(async () => ((await sandboxPods(ns)) === 0 ? true : undefined), { what: 'the channel Pod to be deleted', timeoutMs: 20_000 });
  });

  it('kill() ends the process with its Pod', async () => {
    const ns = await cp.createNamespace('chankill');
    const channel = await sandbox.open!({ ...execRequest(testSession(ns), 'sleep 300'), onLine: () => undefined });
    channel.kill();
    expect((await channel.done).status).toBe('interrupted');
    await waitFor(async () => ((await sandboxPods(ns)) === 0 ? true : undefined), { what: 'the channel Pod to be deleted', timeoutMs: 20_000 });
  });

  it('runs a script whose tool calls act on the session workspace, and returns only what it prints', async () => {
    const ns = await cp.createNamespace('code');
    const box = boxFor(testSession(ns));
    const guard = recordingGuard();
    const r = await execute(box, [
      'from hermes_tools import write_file, read_file, terminal',
      'write_file("a/b.txt", "alpha\\nbeta\\n")',
      'n = len(read_file("a/b.txt")["content"].splitlines())',
      't = terminal("cat a/b.txt | wc -l")',
      'print("lines", n, "wc", t["output"].strip())',
    ].join('\n'), { guard });
    expect(r).toMatchObject({ status: 'success', exit_code: 0, tool_calls_made: 3, output: 'lines 2 wc 2\n' });
    expect(guard.asked).toEqual(['cat a/b.txt | wc -l']);
  });

  it('holds the tool-call, output and time limits', async () => {
    const box = boxFor(testSession(await cp.createNamespace('limits')));
    const calls = await execute(box, [
      'from hermes_tools import search_files, ToolError',
      'for i in range(4):',
      '    try:',
      '        search_files("x"); print("ok", i)',
      '    except ToolError as e:',
      '        print("refused", i, e)',
    ].join('\n'), { codeExecution: { maxToolCalls: 2 } });
    expect(calls.tool_calls_made).toBe(2);
    expect(calls.output).toContain('ok 1\nrefused 2 the limit of 2 tool calls per script was reached');
    const big = await execute(box, 'print("y" * 100000)', { codeExecution: { maxOutputBytes: 1_500 } });
    expect(big).toMatchObject({ status: 'success', truncated: true });
    expect(Buffer.byteLength(big.output)).toBeLessThanOrEqual(1_500); // the marker included
    const slow = await execute(box, 'import time\nwhile True:\n    time.sleep(0.05)', { codeExecution: { timeoutSeconds: 2 } });
    expect(slow).toMatchObject({ status: 'timeout', exit_code: 137 });
  });

  it('never lets variables that look like secrets reach the script', async () => {
    const box = boxFor(testSession(await cp.createNamespace('secrets')));
    const env = { SERVICE_API_KEY: 'k', NPM_TOKEN: 't', PGPASSWORD: 'p', CLIENT_SECRET: 's', GOOGLE_APPLICATION_CREDENTIALS: 'c', BASIC_AUTH: 'a', LOG_LEVEL: 'debug' };
    // As if the Pod's environment carried them (the image's ENV, a passed-through variable).
    const leaky: SessionSandbox = { ...box, open: (cmd, signal) => box.open!({ ...cmd, env: { ...cmd.env, ...env } }, signal) };
    const r = await execute(leaky, [
      'import os',
      `names = ${JSON.stringify(Object.keys(env))}`,
      'print(sorted(n for n in names if n in os.environ))',
      // The process's initial environment block, which deleting from os.environ leaves as it was.
      'print(sorted(e.split(b"=")[0].decode() for e in open("/proc/self/environ", "rb").read().split(b"\\0") if e.split(b"=")[0].decode() in names))',
    ].join('\n'), { sandbox: leaky });
    expect(r.status).toBe('success');
    expect(r.output).toBe("['LOG_LEVEL']\n['LOG_LEVEL']\n");
  });
});
