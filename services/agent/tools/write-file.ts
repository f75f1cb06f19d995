// `write_file` (Hermes' name and arguments: path, content): replaces a file's whole content,
// creating parent folders. The content travels on stdin (`cat > file`), never on the command
// line. A checkpoint of the workspace is taken first (ctx.checkpoint), as before every change.
import { z } from 'zod';
import type { SessionSandbox } from '../../sandbox/index.js';
import { defineTool, type ToolContext } from './registry.js';
import { EXIT, opError, runFileOp } from './file-ops.js';
import { sandboxOf, toolError } from './sandbox-result.js';
import { resolveWorkspacePath } from './workspace-paths.js';

/** The most characters one write may carry (a bigger file is built in parts, or by a command). */
export const MAX_WRITE_CHARS = 10_000_000;

const schema = z.object({
  path: z.string().describe("Path of the file to write (created if it doesn't exist, overwritten if it does); under /workspace"),
  content: z.string().max(MAX_WRITE_CHARS).describe('Complete content to write to the file'),
}).strict();

/** Content that is read_file's `LINE_NUM|CONTENT` display rather than a file (a common model slip). */
export function looksLineNumbered(content: string): boolean {
  const lines = content.split('\n').filter((l) => l.trim() !== '');
  if (lines.length < 2) return false;
  const nums = lines.map((l) => /^\s*(\d+)\|/.exec(l)?.[1]).filter((n): n is string => n !== undefined).map(Number);
  if (nums.length < 2 || nums.length / lines.length < 0.6) return false;
  return nums.every((n, i) => i === 0 || n === nums[i - 1]! + 1);
}

/** Takes the checkpoint; a failed one does not stop the change (the hook logs it), the result says so. */
export async function checkpointBefore(ctx: ToolContext, reason: string): Promise<Record<string, unknown>> {
  if (!ctx.checkpoint) return {};
  try {
    await ctx.checkpoint(reason, ctx.signal);
    return {};
  } catch (err) {
    return { checkpoint_warning: `the checkpoint before this change failed (${err instanceof Error ? err.message : String(err)}); /rollback cannot undo it` };
  }
}

/** A directory, or anything else that is not a regular file (a FIFO would block `cat >` until the timeout). */
const NOT_A_FILE = `[ -d "$f" ] && exit ${EXIT.directory}; [ -e "$f" ] && [ ! -f "$f" ] && exit ${EXIT.special}`;

const WRITE_BODY = [
  NOT_A_FILE,
  `mkdir -p -- "$(dirname -- "$f")" 2>/dev/null || exit ${EXIT.mkdir}`,
  'e=0; [ -e "$f" ] && e=1',
  `cat > "$f" 2>/dev/null || exit ${EXIT.write}`,
  `printf '%s %s' "$e" "$(wc -c < "$f")"`,
].join('\n');

export type WriteOutcome = { ok: true; path: string; bytes: number; created: boolean } | { ok: false; error: string };

/** The kubernetes backend passes stdin through a ConfigMap: at most 1 MB (its MAX_STDIN_BYTES). */
export const KUBERNETES_STDIN_BYTES = 1_000_000;

/** The refusal for content the sandbox cannot pass on stdin, or undefined. */
export function tooLargeForStdin(sandbox: SessionSandbox, content: string, what: string, path: string): string | undefined {
  const size = Buffer.byteLength(content);
  if (sandbox.backend !== 'kubernetes' || size <= KUBERNETES_STDIN_BYTES) return undefined;
  return toolError(`${what}: ${size} bytes is more than this sandbox passes to a command (${KUBERNETES_STDIN_BYTES}); nothing was written. Write the file in parts (e.g. write_file part1, part2, then terminal: cat part1 part2 > ${path}).`);
}

/** Writes `content` to the (checked) /workspace path `path` through the sandbox. */
export async function writeThrough(sandbox: SessionSandbox, signal: AbortSignal, path: string, content: string, what: string): Promise<WriteOutcome> {
  const tooLarge = tooLargeForStdin(sandbox, content, what, path);
  if (tooLarge) return { ok: false, error: tooLarge };
  const op = await runFileOp({ sandbox, signal, path, what, body: WRITE_BODY, stdin: content });
  if (!op.ok) return op;
  const refused = opError(op.result, op.path);
  if (refused) return { ok: false, error: refused };
  if (op.result.exitCode !== 0) return { ok: false, error: toolError(`could not write ${op.path}: ${op.result.output.slice(0, 500)}`, { exit_code: op.result.exitCode }) };
  const [existed, bytes] = op.result.output.trim().split(/\s+/).map(Number);
  return { ok: true, path: op.path, bytes: bytes ?? 0, created: existed === 0 };
}

async function write(args: z.infer<typeof schema>, ctx: ToolContext): Promise<string> {
  const box = sandboxOf(ctx);
  if ('error' in box) return box.error;
  const target = resolveWorkspacePath(args.path);
  if (!target.ok) return toolError(target.error);
  if (looksLineNumbered(args.content)) {
    return toolError("Refusing to write read_file's display text as file content: strip the 'LINE_NUM|' prefixes (or rebuild the intended content) and write again.");
  }
  const tooLarge = tooLargeForStdin(box.sandbox, args.content, 'write_file', target.path);
  if (tooLarge) return tooLarge;
  // Resolve (symlinks, refusals) before the checkpoint: a refused write is no change to snapshot.
  const where = await runFileOp({ sandbox: box.sandbox, signal: ctx.signal, path: target.path, what: 'write_file', body: `${NOT_A_FILE}; exit 0` });
  if (!where.ok) return where.error;
  const refused = opError(where.result, where.path);
  if (refused) return refused;
  const warning = await checkpointBefore(ctx, `write_file ${where.path}`);
  const w = await writeThrough(box.sandbox, ctx.signal, where.path, args.content, 'write_file');
  if (!w.ok) return w.error;
  return JSON.stringify({ path: w.path, bytes_written: w.bytes, created: w.created, ...warning });
}

export const writeFileTool = defineTool({
  name: 'write_file',
  description: 'Write content to a file, completely replacing existing content (creates parent folders). Use this instead of echo/cat heredoc in terminal. OVERWRITES the whole file — use patch for targeted edits.',
  toolset: 'file',
  sideEffect: 'writes',
  schema,
  handler: write,
});
