// `execute_code` (Hermes' code_execution toolset): a Python script runs in the session's sandbox
// and calls tools through the generated `hermes_tools` module over the sandbox's line channel
// (SessionSandbox.open: the process's stdin and stdout; see code/python.ts for how the script's
// own output is kept apart). Only the script's output (stdout and stderr) comes back to the model,
// within the Profile's limits (spec.codeExecution: 300 s, 50 000 bytes, 50 tool calls).
import { z } from 'zod';
import { defineTool, type Tool, type ToolContext } from './registry.js';
import { CODE_EXECUTION_DEFAULTS, SCRIPT_TOOLS } from './code/limits.js';
import { BOOTSTRAP_COMMAND, hermesToolsModule, NO_PROGRAMS } from './code/python.js';
import { ScriptRpc } from './code/rpc.js';
import { abnormal, sandboxOf, toolError } from './sandbox-result.js';
import type { ExecResult, SandboxChannel } from '../../sandbox/index.js';

/** Longest script accepted. */
export const MAX_CODE_CHARS = 200_000;
export const NO_CHANNEL = 'This sandbox backend cannot run execute_code (it has no channel to the worker); use terminal instead.';

const schema = z.object({
  code: z.string().min(1).max(MAX_CODE_CHARS).describe('Python 3 source to run. `from hermes_tools import web_search, read_file, …` calls tools (each returns a dict, or text); print() what you want back'),
}).strict();

const utf8 = new TextDecoder('utf-8');
/** Is `b` a UTF-8 continuation byte (10xxxxxx)? A cut there would split a character. */
const continuation = (b: number | undefined) => b !== undefined && (b & 0xc0) === 0x80;

/**
 * At most `max` bytes of `text` (UTF-8), marker included: when longer, the first 40 % and the last
 * 60 % are kept, cut at character boundaries, with a marker between — the end of the output (the
 * result, a traceback) is what a script's caller most needs.
 */
export function capBytes(text: string, max: number): { text: string; cut: boolean } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return { text, cut: false };
  const marker = `\n[… output cut to ${max} bytes: the middle is left out …]\n`;
  const room = Math.max(0, max - Buffer.byteLength(marker, 'utf8'));
  let headEnd = Math.floor(room * 0.4);
  while (headEnd > 0 && continuation(bytes[headEnd])) headEnd--;
  let tailStart = bytes.length - (room - Math.floor(room * 0.4));
  while (tailStart < bytes.length && continuation(bytes[tailStart])) tailStart++;
  return { text: `${utf8.decode(bytes.subarray(0, headEnd))}${marker}${utf8.decode(bytes.subarray(tailStart))}`, cut: true };
}

const statusOf = (r: ExecResult): string => (r.status === 'ok' ? (r.exitCode === 0 ? 'success' : 'error') : r.status);

async function run(code: string, ctx: ToolContext): Promise<string> {
  const box = sandboxOf(ctx);
  if ('error' in box) return box.error;
  if (!box.sandbox.open) return toolError(NO_CHANNEL);
  const limits = { ...CODE_EXECUTION_DEFAULTS, ...ctx.codeExecution };
  const callable = new Map(SCRIPT_TOOLS.flatMap((n) => { const t = ctx.tools?.get(n); return t ? [[n, t] as const] : []; }));
  // The script's calls end with it: a call still running when it ended is abandoned.
  const ended = new AbortController();
  const link: { channel?: SandboxChannel } = {};
  const rpc = new ScriptRpc(callable, { ...ctx, signal: AbortSignal.any([ctx.signal, ended.signal]) }, limits.maxToolCalls, (line) => link.channel?.send(line), () => link.channel?.kill());
  const t0 = ctx.now();
  const channel = link.channel = await box.sandbox.open({
    command: BOOTSTRAP_COMMAND, timeoutMs: limits.timeoutSeconds * 1_000, maxOutputChars: limits.maxOutputBytes,
    onLine: (line) => rpc.onLine(line),
  }, ctx.signal);
  channel.send(JSON.stringify({ module: hermesToolsModule([...callable.values()]), code }));
  const r = await channel.done;
  ended.abort();
  const out = capBytes(r.output, limits.maxOutputBytes);
  return JSON.stringify({
    status: statusOf(r), output: out.text, tool_calls_made: rpc.calls, duration_seconds: Math.round((ctx.now() - t0) / 100) / 10, exit_code: r.exitCode,
    ...(r.truncated || out.cut ? { truncated: true } : {}),
    ...abnormal(r),
    ...(rpc.stopped ? { status: 'error', reason: rpc.stopped, error: rpc.stopped } : {}),
  });
}

export const executeCodeTool: Tool = defineTool({
  name: 'execute_code',
  description: `Run a Python 3 script in this session's sandbox (workspace at /workspace). The script can call tools through \`hermes_tools\` (${SCRIPT_TOOLS.join(', ')} — those enabled here; terminal in the foreground only), at most 50 calls by default; only what the script prints comes back, so use it to chain many tool calls and return a summary. ${NO_PROGRAMS} Limits: 300 s and 50 KB of output by default. Environment variables that look like secrets are removed.`,
  toolset: 'code_execution',
  sideEffect: 'external',
  terminalLike: true,
  schema,
  handler: (args, ctx) => run(args.code, ctx),
});
