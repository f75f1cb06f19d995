// Background commands (terminal background=true) followed with process: poll, log, wait, kill,
// list; per session (another session sees none of them), at most 64 tracked, 200 000 characters of
// rolling output, and a finished process kept 30 minutes (a clock the test moves).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKGROUND_TIMEOUT_MS, FINISHED_TTL_MS, MAX_TRACKED_PROCESSES, ProcessRegistry, processTool, terminalTool, type ToolContext } from '../../../services/agent/index.js';
import { testSessionSandbox, type TestSessionSandbox } from '../../support/sandbox.js';
import { eventually } from '../../support/services.js';
import { callJson, recordingGuard, toolContext } from './helpers.js';

let box: TestSessionSandbox;
let clock = Date.now();
const processes = new ProcessRegistry(() => clock);
const terminal = terminalTool(processes);
const proc = processTool(processes);
const session = randomUUID();
const ctx = (over: Partial<ToolContext> = {}) => toolContext({ sandbox: box, guard: recordingGuard(), sessionId: session, ...over });

async function startBg(command: string, c = ctx()): Promise<string> {
  const r = await callJson(terminal, { command, background: true }, c);
  expect(r, JSON.stringify(r)).toMatchObject({ output: 'Background process started', exit_code: 0 });
  return String(r.session_id);
}

beforeAll(async () => {
  box = await testSessionSandbox();
});
afterAll(async () => {
  processes.close();
  await box?.cleanup();
});

describe('process', () => {
  it('polls a running command, waits for its exit code, and reads its log by lines', async () => {
    const id = await startBg('for i in 1 2 3 4 5; do echo "line $i"; done; read _ < /dev/null; sleep 0.3; exit 4');
    expect(id).toMatch(/^proc_[0-9a-f]{12}$/);
    const polled = await callJson(proc, { action: 'poll', session_id: id }, ctx());
    expect(polled).toMatchObject({ session_id: id, status: expect.stringMatching(/running|exited/) });
    const waited = await callJson(proc, { action: 'wait', session_id: id, timeout: 30 }, ctx());
    expect(waited).toMatchObject({ status: 'exited', exit_code: 4 });
    expect(String(waited.output)).toContain('line 5');
    expect(await callJson(proc, { action: 'poll', session_id: id }, ctx())).toMatchObject({ status: 'exited', exit_code: 4, output_preview: expect.stringContaining('line 1') });
    const tail = await callJson(proc, { action: 'log', session_id: id, limit: 2 }, ctx());
    expect(tail).toMatchObject({ output: 'line 4\nline 5', total_lines: 5, showing: 'lines 4–5 of 5' });
    expect(await callJson(proc, { action: 'log', session_id: id, offset: 1, limit: 2 }, ctx())).toMatchObject({ output: 'line 2\nline 3', showing: 'lines 2–3 of 5' });
    expect(await callJson(proc, { action: 'log', session_id: id, offset: 9 }, ctx())).toMatchObject({ output: '', showing: 'no lines (5 in all)' });
  });

  it('waits until a timeout and says the process still runs; kill ends it', async () => {
    const id = await startBg('echo up; sleep 60');
    expect(await callJson(proc, { action: 'wait', session_id: id, timeout: 1 }, ctx())).toMatchObject({ status: 'timeout', timeout_note: expect.stringContaining('still running') });
    const killed = await callJson(proc, { action: 'kill', session_id: id }, ctx());
    expect(killed).toMatchObject({ status: 'killed' });
    expect(killed.exit_code).not.toBe(0);
    expect(await callJson(proc, { action: 'kill', session_id: id }, ctx())).toMatchObject({ status: 'already_exited' });
  });

  it("lists only this session's processes; another session cannot see or kill them", async () => {
    const id = await startBg('sleep 60');
    const mine = await callJson(proc, { action: 'list' }, ctx());
    expect((mine.processes as { session_id: string }[]).map((p) => p.session_id)).toContain(id);
    const other = ctx({ sessionId: randomUUID() });
    expect((await callJson(proc, { action: 'list' }, other)).processes).toEqual([]);
    expect(await callJson(proc, { action: 'kill', session_id: id }, other)).toMatchObject({ status: 'not_found' });
    expect(await callJson(proc, { action: 'poll', session_id: id }, ctx())).toMatchObject({ status: 'running' });
    await callJson(proc, { action: 'kill', session_id: id }, ctx());
  });

  it('keeps the newest 200 000 characters of output', async () => {
    const id = await startBg("i=0; while [ $i -lt 3000 ]; do printf '%099d\\n' $i; i=$((i+1)); done; echo END");
    await callJson(proc, { action: 'wait', session_id: id, timeout: 60 }, ctx());
    const log = await callJson(proc, { action: 'log', session_id: id, limit: 5_000 }, ctx());
    expect(String(log.output).length).toBeLessThanOrEqual(200_000);
    expect(String(log.output)).toMatch(/END$/);
    expect(log.note).toMatch(/newest/);
  });

  it('keeps a finished process 30 minutes, then forgets it', async () => {
    const id = await startBg('echo done');
    await callJson(proc, { action: 'wait', session_id: id, timeout: 30 }, ctx());
    await eventually(() => processes.get(session, id)?.finishedAt !== undefined, 'the registry to see the exit');
    clock += FINISHED_TTL_MS - 1_000;
    expect(await callJson(proc, { action: 'poll', session_id: id }, ctx())).toMatchObject({ status: 'exited' });
    clock += 2_000;
    expect(await callJson(proc, { action: 'poll', session_id: id }, ctx())).toMatchObject({ status: 'not_found' });
  });

  it('tracks at most 64 running processes per session, refusing the 65th', async () => {
    const crowded = ctx({ sessionId: randomUUID() });
    const ids: string[] = [];
    for (let i = 0; i < MAX_TRACKED_PROCESSES; i++) ids.push(await startBg('sleep 60', crowded));
    const refused = await callJson(terminal, { command: 'sleep 60', background: true }, crowded);
    expect(refused.error).toMatch(/already tracks 64 running background processes/);
    await callJson(proc, { action: 'kill', session_id: ids[0] }, crowded);
    expect(await callJson(terminal, { command: 'true', background: true }, crowded)).toMatchObject({ exit_code: 0 });
    for (const id of ids) await callJson(proc, { action: 'kill', session_id: id }, crowded);
  });

  // Through the message API one key opened a new conversation per request and started 64
  // sandboxes in each (192 running sleeps after three requests): nothing bounded the worker.
  it('bounds the running background commands of all sessions of a worker together', async () => {
    const own = new ProcessRegistry(() => clock, 3);
    const ownTerminal = terminalTool(own);
    const ownProc = processTool(own);
    const sessions = [randomUUID(), randomUUID(), randomUUID()];
    const ids: string[] = [];
    for (const [i, id] of [sessions[0], sessions[1], sessions[1]].entries()) {
      const r = await callJson(ownTerminal, { command: 'sleep 60', background: true }, ctx({ sessionId: id! }));
      expect(r, `start ${i}`).toMatchObject({ exit_code: 0 });
      ids.push(String(r.session_id));
    }
    const refused = await callJson(ownTerminal, { command: 'sleep 60', background: true }, ctx({ sessionId: sessions[2]! }));
    expect(refused.error).toMatch(/worker already runs 3 background processes for all its sessions/);
    await callJson(ownProc, { action: 'kill', session_id: ids[0] }, ctx({ sessionId: sessions[0]! }));
    await eventually(() => own.get(sessions[0]!, ids[0]!)?.finishedAt !== undefined, 'the killed command to end');
    expect(await callJson(ownTerminal, { command: 'sleep 60', background: true }, ctx({ sessionId: sessions[2]! }))).toMatchObject({ exit_code: 0 });
    own.close();
  });

  // One chat user with four conversations held all 256 of a worker's places (64 per session).
  it('bounds one person\'s running background commands over all their sessions', async () => {
    const own = new ProcessRegistry(() => clock, 10, 2);
    const ownTerminal = terminalTool(own);
    const ownProc = processTool(own);
    const [s1, s2, s3, s4] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const start = (sessionId: string, userId?: string) =>
      callJson(ownTerminal, { command: 'sleep 60', background: true }, ctx({ sessionId, ...(userId ? { userId } : {}) }));
    const first = await start(s1!, 'alice');
    expect(first).toMatchObject({ exit_code: 0 });
    expect(await start(s2!, 'alice')).toMatchObject({ exit_code: 0 });
    const refused = await start(s3!, 'alice');
    expect(refused.error).toMatch(/^You already run 2 background processes over your conversations on this worker \(the most one person may\); nothing was started\./);
    expect(own.list(s3!)).toEqual([]);
    expect(await start(s3!, 'bob')).toMatchObject({ exit_code: 0 }); // another person has room
    expect(await start(s4!)).toMatchObject({ exit_code: 0 }); // a turn of nobody's (cron) is bounded by the worker only
    await callJson(ownProc, { action: 'kill', session_id: first.session_id }, ctx({ sessionId: s1! }));
    await eventually(() => own.get(s1!, String(first.session_id))?.finishedAt !== undefined, 'the killed command to end');
    expect(await start(s3!, 'alice')).toMatchObject({ exit_code: 0 });
    own.close();
  });

  it('ends every background command when the worker closes its registry', async () => {
    const own = new ProcessRegistry();
    const started = await own.start({ sessionId: session, sandbox: box, command: 'sleep 60', cwd: '/workspace' });
    if (!started.ok) throw new Error(started.error);
    own.close();
    const r = await started.proc.running.done;
    expect(r.status).not.toBe('ok');
    expect(own.list(session)).toEqual([]);
  });

  it("asks the sandbox for the call's timeout, else 24 h, never the turn's signal", async () => {
    const id = await startBg('true');
    expect(box.calls.at(-1)).toMatchObject({ command: 'true', timeoutMs: BACKGROUND_TIMEOUT_MS, maxOutputChars: 200_000 });
    const timed = await callJson(terminal, { command: 'sleep 60', background: true, timeout: 5 }, ctx());
    expect(box.calls.at(-1)).toMatchObject({ timeoutMs: 5_000 });
    await callJson(proc, { action: 'kill', session_id: timed.session_id }, ctx());
    await callJson(proc, { action: 'wait', session_id: id }, ctx());
  });

  it('needs a session_id for everything but list', async () => {
    expect((await callJson(proc, { action: 'poll' }, ctx())).error).toMatch(/session_id is required/);
  });
});
