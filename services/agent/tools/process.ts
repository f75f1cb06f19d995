// `process` (Hermes' name and arguments): the session's background commands — list, poll (status
// and new output), log (lines, paged), wait (until it ends, a timeout or a stop), kill.
import { z } from 'zod';
import { defineTool, type Tool, type ToolContext } from './registry.js';
import type { ProcessRegistry, TrackedProcess } from './process-registry.js';
import { abnormal, toolError } from './sandbox-result.js';

const PREVIEW_CHARS = 1_000;
/** The longest `wait`: under the tool batch deadline (420 s), which would abandon the call. */
export const MAX_WAIT_SECONDS = 400;
const LOG_LINES = 200;

const schema = z.object({
  action: z.enum(['list', 'poll', 'log', 'wait', 'kill']).describe("'list' (all of this session's), 'poll' (status + new output), 'log' (output lines, paged), 'wait' (block until it ends or timeout), 'kill' (terminate)"),
  session_id: z.string().optional().describe("The process's id from terminal(background=true) (proc_…). Required for all actions except 'list'."),
  timeout: z.number().int().min(1).optional().describe(`Max seconds to block for 'wait' (default: the sandbox's command timeout, 180 unless configured; at most ${MAX_WAIT_SECONDS})`),
  offset: z.number().int().min(0).optional().describe("For 'log': how many lines to skip from the start (line N is offset N-1); 0 or omitted: the last `limit` lines"),
  limit: z.number().int().min(1).optional().describe("Max lines for 'log' (default 200)"),
}).strict();

type Args = z.infer<typeof schema>;

const output = (p: TrackedProcess) => (p.result ? { text: p.result.output, truncated: p.result.truncated } : p.running.output());
const state = (p: TrackedProcess) => (p.result ? 'exited' : 'running');

function summary(p: TrackedProcess, now: number): Record<string, unknown> {
  return {
    session_id: p.id, command: p.command.slice(0, 200), cwd: p.cwd, status: state(p),
    started_at: new Date(p.startedAt).toISOString(), uptime_seconds: Math.max(0, Math.round(((p.finishedAt ?? now) - p.startedAt) / 1_000)),
    ...(p.result ? { exit_code: p.result.exitCode, ...abnormal(p.result) } : {}),
  };
}

function poll(p: TrackedProcess, now: number): string {
  const { text, truncated } = output(p);
  return JSON.stringify({ ...summary(p, now), output_preview: text.slice(-PREVIEW_CHARS), ...(truncated ? { output_truncated: true } : {}) });
}

function log(p: TrackedProcess, args: Args): string {
  const { text, truncated } = output(p);
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const limit = args.limit ?? LOG_LINES;
  const from = args.offset === undefined || args.offset === 0 ? Math.max(0, lines.length - limit) : args.offset;
  const selected = lines.slice(from, from + limit);
  return JSON.stringify({
    session_id: p.id, status: state(p), output: selected.join('\n'), total_lines: lines.length, showing: selected.length ? `lines ${from + 1}–${from + selected.length} of ${lines.length}` : `no lines (${lines.length} in all)`,
    ...(truncated ? { note: `only the newest ${text.length} characters of output are kept` } : {}),
  });
}

async function wait(p: TrackedProcess, args: Args, ctx: ToolContext): Promise<string> {
  const seconds = Math.min(args.timeout ?? ctx.sandbox?.timeoutSeconds ?? 180, MAX_WAIT_SECONDS);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((r) => { timer = setTimeout(() => r('timeout'), seconds * 1_000); });
  let onAbort = () => undefined as void;
  const stopped = new Promise<'interrupted'>((r) => { onAbort = () => r('interrupted'); if (ctx.signal.aborted) onAbort(); else ctx.signal.addEventListener('abort', onAbort, { once: true }); });
  const first = await Promise.race([p.running.done, timedOut, stopped]);
  clearTimeout(timer);
  ctx.signal.removeEventListener('abort', onAbort);
  const clamped = args.timeout !== undefined && args.timeout > seconds ? ` (the ${args.timeout} s asked for was clamped to ${MAX_WAIT_SECONDS} s)` : '';
  if (first === 'timeout') return JSON.stringify({ session_id: p.id, status: 'timeout', output: output(p).text.slice(-PREVIEW_CHARS), timeout_note: `Waited ${seconds} s${clamped}; the process is still running` });
  if (first === 'interrupted') return JSON.stringify({ session_id: p.id, status: 'interrupted', output: output(p).text.slice(-PREVIEW_CHARS), note: 'the wait was stopped; the process keeps running' });
  return JSON.stringify({ session_id: p.id, status: 'exited', exit_code: first.exitCode, output: first.output.slice(-2 * PREVIEW_CHARS), ...abnormal(first) });
}

async function kill(p: TrackedProcess): Promise<string> {
  if (p.result) return JSON.stringify({ session_id: p.id, status: 'already_exited', exit_code: p.result.exitCode });
  p.running.kill();
  const r = await p.running.done;
  return JSON.stringify({ session_id: p.id, status: 'killed', exit_code: r.exitCode });
}

function act(processes: ProcessRegistry, args: Args, ctx: ToolContext): Promise<string> | string {
  if (args.action === 'list') return JSON.stringify({ processes: processes.list(ctx.sessionId).map((p) => ({ ...summary(p, processes.now()), output_preview: output(p).text.slice(-200) })) });
  if (!args.session_id) return toolError(`session_id is required for ${args.action}`);
  const p = processes.get(ctx.sessionId, args.session_id);
  if (!p) return JSON.stringify({ status: 'not_found', error: `No process with ID ${args.session_id} in this session (finished processes are kept 30 minutes).` });
  if (args.action === 'poll') return poll(p, processes.now());
  if (args.action === 'log') return log(p, args);
  if (args.action === 'wait') return wait(p, args, ctx);
  return kill(p);
}

/** `process`, over the same registry as `terminal`. */
export function processTool(processes: ProcessRegistry): Tool {
  return defineTool({
    name: 'process',
    description: "Manage background processes started with terminal(background=true): 'list', 'poll' (status + new output), 'log' (full output, paged by lines), 'wait' (block until done or timeout), 'kill' (terminate). Output keeps the newest 200 000 characters; finished processes are kept 30 minutes.",
    toolset: 'terminal',
    sideEffect: 'external',
    terminalLike: true,
    schema,
    handler: (args, ctx) => act(processes, args, ctx),
  });
}
