// `read_file` (Hermes' name and arguments: path, offset, limit — in lines, 1-based): a page of a
// text file with line numbers (`LINE_NUM|CONTENT`). As Hermes: 500 lines by default, 2 000 at
// most, lines cut at 2 000 characters, and a page over 100 000 characters is refused (read a
// narrower range) rather than cut. Its results never spill (results.ts NEVER_SPILLS).
import { z } from 'zod';
import { defineTool, type ToolContext } from './registry.js';
import { opError, readableChecks, runFileOp } from './file-ops.js';
import { sandboxOf, toolError } from './sandbox-result.js';
import { resolveWorkspacePath } from './workspace-paths.js';

export const READ_DEFAULT_LINES = 500;
export const READ_MAX_LINES = 2_000;
export const MAX_LINE_CHARS = 2_000;
export const MAX_READ_CHARS = 100_000;
/** Bytes of one line the sandbox sends (a multi-byte line is cut to MAX_LINE_CHARS characters here). */
const LINE_BYTES = MAX_LINE_CHARS * 4;

const schema = z.object({
  path: z.string().describe('Path of the file to read (absolute under /workspace, relative to /workspace, or ~/…)'),
  // Clamped as Hermes does (normalize_read_pagination) rather than refused.
  offset: z.number().int().optional().describe('Line number to start reading from (1-indexed, default: 1)'),
  limit: z.number().int().optional().describe(`Maximum number of lines to read (default: ${READ_DEFAULT_LINES}, max: ${READ_MAX_LINES})`),
}).strict();

/** Line numbers as Hermes shows them: right-aligned in 6 columns, then `|`. */
function numbered(lines: string[], first: number): { text: string; cut: boolean } {
  let cut = false;
  const out = lines.map((line, i) => {
    let l = line;
    if (l.length > MAX_LINE_CHARS) {
      l = `${l.slice(0, MAX_LINE_CHARS).replace(/\uFFFD+$/, '')}... [truncated]`;
      cut = true;
    }
    return `${String(first + i).padStart(6)}|${l}`;
  });
  return { text: out.join('\n'), cut };
}

async function read(args: z.infer<typeof schema>, ctx: ToolContext): Promise<string> {
  const box = sandboxOf(ctx);
  if ('error' in box) return box.error;
  const target = resolveWorkspacePath(args.path);
  if (!target.ok) return toolError(target.error);
  const offset = Math.max(1, args.offset ?? 1);
  const limit = Math.max(1, Math.min(args.limit ?? READ_DEFAULT_LINES, READ_MAX_LINES));
  const body = [
    readableChecks(true),
    // Lines as awk's NR counts them (a last line without a newline counts), with coreutils only:
    // awk is an /etc/alternatives link on Debian, dangling in a sandbox with a minimal /etc.
    'n=$(wc -l < "$f"); [ -s "$f" ] && [ "$(tail -c 1 -- "$f" | wc -l)" -eq 0 ] && n=$((n + 1))',
    `printf '%s %s\\n' "$(wc -c < "$f")" "$n"`,
    `sed -n '${offset},${offset + limit - 1}p' "$f" 2>/dev/null | cut -b 1-${LINE_BYTES}`,
  ].join('\n');
  const op = await runFileOp({ sandbox: box.sandbox, signal: ctx.signal, path: target.path, what: 'read_file', body, maxOutputChars: 4 * MAX_READ_CHARS + 100 });
  if (!op.ok) return op.error;
  const r = op.result;
  const refused = opError(r, op.path);
  if (refused) return refused;
  if (r.exitCode !== 0) return toolError(`could not read ${op.path}: ${r.output.slice(0, 500)}`, { exit_code: r.exitCode });
  return shape(r.output, r.truncated, op.path, offset);
}

/** The page as the model gets it, from the script's output (a `size lines` header, then the lines). */
function shape(output: string, cut: boolean, path: string, offset: number): string {
  const nl = output.indexOf('\n');
  const [size = 0, total = 0] = output.slice(0, nl).trim().split(/\s+/).map(Number);
  const lines = output.slice(nl + 1).split('\n');
  if (lines.at(-1) === '') lines.pop();
  const page = numbered(lines, offset);
  if (cut || page.text.length > MAX_READ_CHARS) {
    return toolError(`Reading lines ${offset}–${offset + lines.length - 1} of ${path} gives more than ${MAX_READ_CHARS.toLocaleString('en-US')} characters; read a narrower range with offset and limit (the file has ${total} lines).`, { total_lines: total, file_size: size });
  }
  const end = offset + lines.length - 1;
  const hint = end < total ? `Showing lines ${offset}–${end} of ${total}. Use offset=${end + 1} to continue reading.` : offset > total && total > 0 ? `offset ${offset} is past the end of the file (${total} lines).` : undefined;
  return JSON.stringify({ path, content: page.text, total_lines: total, file_size: size, truncated: end < total, ...(page.cut ? { truncated_lines: true } : {}), ...(hint ? { hint } : {}) });
}

export const readFileTool = defineTool({
  name: 'read_file',
  description: "Read a text file with line numbers and pagination (output format 'LINE_NUM|CONTENT'). Use this instead of cat/head/tail in terminal. Use offset and limit for large files; reads over 100 000 characters are refused. Binary files cannot be read.",
  toolset: 'file',
  sideEffect: 'read-only',
  schema,
  handler: read,
});
