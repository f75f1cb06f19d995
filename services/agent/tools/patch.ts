// `patch` (Hermes' name and arguments, replace mode: path, old_string, new_string, replace_all):
// a find-and-replace edit that returns a unified diff. The match is exact (Hermes also tries
// fuzzy strategies; we do not: an edit the model did not spell out is not made). Hermes' V4A
// `mode: "patch"` is refused with a pointer to replace mode. Read → replace → write are two
// sandbox calls; the write goes to the path the read resolved, after a checkpoint.
import { z } from 'zod';
import { defineTool, type ToolContext } from './registry.js';
import { opError, readableChecks, runFileOp } from './file-ops.js';
import { sandboxOf, toolError } from './sandbox-result.js';
import { unifiedDiff } from './unified-diff.js';
import { resolveWorkspacePath } from './workspace-paths.js';
import { checkpointBefore, tooLargeForStdin, writeThrough, MAX_WRITE_CHARS } from './write-file.js';

/** The largest file patch edits (its text comes back through the sandbox's output). */
export const MAX_PATCH_FILE_CHARS = 2_000_000;

const schema = z.object({
  mode: z.enum(['replace', 'patch']).optional().describe("Edit mode: 'replace' (default) needs path, old_string and new_string"),
  path: z.string().optional().describe('File path to edit (under /workspace)'),
  old_string: z.string().optional().describe('Exact text to find and replace. Must be unique in the file unless replace_all=true; include surrounding lines to make it unique.'),
  new_string: z.string().optional().describe("Replacement text ('' deletes the matched text)"),
  replace_all: z.boolean().optional().describe('Replace every occurrence instead of requiring a unique match (default: false)'),
  patch: z.string().optional().describe("V4A multi-file patch (mode='patch'); not supported here"),
}).strict();

type Args = z.infer<typeof schema>;

const count = (text: string, needle: string) => {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
};

function usage(args: Args): string | undefined {
  if (args.mode === 'patch') return "mode='patch' (V4A patches) is not supported here; edit with mode='replace' (path, old_string, new_string), once per change, or rewrite the file with write_file.";
  if (!args.path) return "path is required (mode='replace')";
  if (args.old_string === undefined || args.new_string === undefined) return 'old_string and new_string are required';
  if (args.old_string === '') return 'old_string must not be empty (use write_file to write a whole file)';
  return undefined;
}

async function readWhole(ctx: ToolContext, path: string): Promise<{ ok: true; path: string; text: string } | { ok: false; error: string }> {
  const op = await runFileOp({ sandbox: ctx.sandbox!, signal: ctx.signal, path, what: 'patch', body: `${readableChecks(true)}\ncat -- "$f" 2>/dev/null`, maxOutputChars: MAX_PATCH_FILE_CHARS });
  if (!op.ok) return op;
  const refused = opError(op.result, op.path);
  if (refused) return { ok: false, error: refused };
  if (op.result.exitCode !== 0) return { ok: false, error: toolError(`could not read ${op.path}`, { exit_code: op.result.exitCode }) };
  if (op.result.truncated) return { ok: false, error: toolError(`${op.path} is larger than patch edits (${MAX_PATCH_FILE_CHARS.toLocaleString('en-US')} characters); edit it with a terminal command.`) };
  // Bytes that are not UTF-8 arrive as U+FFFD and would be written back changed.
  if (op.result.output.includes('\uFFFD')) return { ok: false, error: toolError(`${op.path} is not plain UTF-8 text (or holds U+FFFD); patch would change bytes it was not asked to. Edit it with a terminal command.`) };
  return { ok: true, path: op.path, text: op.result.output };
}

async function edit(args: Args, ctx: ToolContext): Promise<string> {
  const box = sandboxOf(ctx);
  if ('error' in box) return box.error;
  const bad = usage(args);
  if (bad) return toolError(bad);
  const target = resolveWorkspacePath(args.path!);
  if (!target.ok) return toolError(target.error);
  const file = await readWhole(ctx, target.path);
  if (!file.ok) return file.error;
  const oldString = args.old_string!;
  const n = count(file.text, oldString);
  if (n === 0) return toolError(`Could not find old_string in ${file.path}.`, { _hint: 'old_string not found. Use read_file to verify the current content, or search_files to locate the text.' });
  if (n > 1 && !args.replace_all) return toolError(`old_string occurs ${n} times in ${file.path}; include more surrounding context to make it unique, or set replace_all=true.`);
  const updated = args.replace_all ? file.text.split(oldString).join(args.new_string!) : file.text.replace(oldString, () => args.new_string!);
  if (updated.length > MAX_WRITE_CHARS) return toolError(`the edited file would be over ${MAX_WRITE_CHARS.toLocaleString('en-US')} characters; edit it with a terminal command.`);
  const tooLarge = tooLargeForStdin(box.sandbox, updated, 'patch', file.path);
  if (tooLarge) return tooLarge;
  const warning = await checkpointBefore(ctx, `patch ${file.path}`);
  const w = await writeThrough(box.sandbox, ctx.signal, file.path, updated, 'patch');
  if (!w.ok) return w.error;
  return JSON.stringify({ success: true, path: w.path, replacements: args.replace_all ? n : 1, diff: unifiedDiff(w.path, file.text, updated), files_modified: [w.path], ...warning });
}

export const patchTool = defineTool({
  name: 'patch',
  description: "Targeted find-and-replace edit in a file: old_string (exact text, unique unless replace_all=true) becomes new_string. Use this instead of sed/awk in terminal. Returns a unified diff of the change.",
  toolset: 'file',
  sideEffect: 'writes',
  schema,
  handler: edit,
});
