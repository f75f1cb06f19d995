// `terminal` (Hermes' name and arguments: command, timeout, workdir, background): one shell
// command in the session's sandbox. Every command first passes the approval guard; a denied one
// runs nothing and the model gets the guard's message. Foreground commands time out after the
// Profile's limit (180 s by default, 600 s at most: longer work runs in the background).
import { z } from 'zod';
import { MAX_TIMEOUT_SECONDS, WORKSPACE_PATH, type ExecResult, type RunningCommand } from '../../sandbox/index.js';
import { defineTool, type Tool, type ToolContext } from './registry.js';
import type { ProcessRegistry } from './process-registry.js';
import { abnormal, sandboxOf, toolError } from './sandbox-result.js';
import { resolveWorkspacePath } from './workspace-paths.js';

export const NO_GUARD = 'Refused: no approval guard configured, so no command may run here.';
/** Longest command line accepted (a model pasting a file into the command is told to use write_file). */
export const MAX_COMMAND_CHARS = 64_000;

const schema = z.object({
  command: z.string().min(1).max(MAX_COMMAND_CHARS).describe('The shell command to run (by /bin/sh -c in the sandbox, working directory /workspace unless workdir says otherwise; in a session sandbox, where the previous command left off)'),
  timeout: z.number().int().min(1).optional().describe(`Max seconds to wait (default: the sandbox's limit, 180 unless configured; foreground max ${MAX_TIMEOUT_SECONDS}). Longer work: background=true`),
  workdir: z.string().optional().describe('Working directory for this command, under /workspace (absolute, or relative to /workspace)'),
  background: z.boolean().optional().describe('Start the command in the background and return at once with a session_id; follow it with the process tool (poll, log, wait, kill)'),
}).strict();

type Args = z.infer<typeof schema>;

/** A foreground result as Hermes reports it (output, exit_code, error) plus the sandbox's status. */
export function commandResult(r: ExecResult): string {
  return JSON.stringify({ output: r.output, exit_code: r.exitCode, error: null, ...(r.truncated ? { truncated: true } : {}), ...abnormal(r), duration_ms: r.durationMs });
}

/** The settled result when `start` failed at once (degraded), else undefined. */
async function failedAtStart(running: RunningCommand): Promise<ExecResult | undefined> {
  const pending = Symbol('pending');
  const first = await Promise.race([running.done, new Promise<typeof pending>((r) => setImmediate(() => r(pending)))]);
  return first === pending || first.status === 'ok' ? undefined : first;
}

async function background(args: Args, ctx: ToolContext, cwd: string, processes: ProcessRegistry): Promise<string> {
  const started = await processes.start({ sessionId: ctx.sessionId, ...(ctx.userId !== undefined ? { userId: ctx.userId } : {}), sandbox: ctx.sandbox!, command: args.command, cwd, ...(args.timeout ? { timeoutMs: args.timeout * 1_000 } : {}) });
  if (!started.ok) return toolError(started.error, { exit_code: -1 });
  const failed = await failedAtStart(started.proc.running);
  if (failed) return JSON.stringify({ output: failed.output, exit_code: failed.exitCode, session_id: started.proc.id, ...abnormal(failed) });
  return JSON.stringify({ output: 'Background process started', session_id: started.proc.id, exit_code: 0, error: null, hint: 'Follow it with process {"action": "poll" | "log" | "wait" | "kill", "session_id": …}.' });
}

async function run(args: Args, ctx: ToolContext, processes: ProcessRegistry): Promise<string> {
  const box = sandboxOf(ctx);
  if ('error' in box) return box.error;
  if (!ctx.guard) return toolError(NO_GUARD, { exit_code: -1 });
  if (args.command.includes('\0')) return toolError('command contains a NUL character, which no shell command line can hold; nothing was run.', { exit_code: -1 });
  const dir = args.workdir === undefined ? { ok: true as const, path: WORKSPACE_PATH } : resolveWorkspacePath(args.workdir, WORKSPACE_PATH, { allowProtected: true });
  if (!dir.ok) return toolError(`workdir: ${dir.error}`, { exit_code: -1 });
  if (!args.background && args.timeout !== undefined && args.timeout > MAX_TIMEOUT_SECONDS) {
    return toolError(`timeout ${args.timeout} s is over the foreground maximum of ${MAX_TIMEOUT_SECONDS} s; run it with background=true and follow it with the process tool.`, { exit_code: -1 });
  }
  const decision = await ctx.guard.check(args.command, ctx.signal);
  if (!decision.allowed) return JSON.stringify({ output: '', exit_code: -1, error: decision.message, status: 'blocked' });
  if (args.background) return background(args, ctx, dir.path, processes);
  // Without workdir the backend chooses: /workspace, or in a session sandbox where the last command left off.
  const cwd = args.workdir === undefined ? {} : { cwd: dir.path };
  const r = await box.sandbox.run({ command: args.command, ...cwd, ...(args.timeout ? { timeoutMs: args.timeout * 1_000 } : {}) }, ctx.signal);
  return commandResult(r);
}

/** `terminal`, with its background commands tracked in `processes`. */
export function terminalTool(processes: ProcessRegistry): Tool {
  return defineTool({
    name: 'terminal',
    description: 'Run a shell command in this session\'s sandbox (a fresh, isolated environment with the session workspace at /workspace; HOME=/workspace). Returns output (stdout and stderr interleaved) and exit_code. Use read_file/write_file/patch/search_files instead of cat/echo/sed/grep for files. Long-running work: background=true, then the process tool.',
    toolset: 'terminal',
    sideEffect: 'external',
    terminalLike: true,
    schema,
    handler: (args, ctx) => run(args, ctx, processes),
  });
}
