// `search_files` (Hermes' name and arguments: pattern, target content|files, path, file_glob,
// limit, offset, output_mode, context): content search with grep (an extended regular
// expression — Hermes uses ripgrep's syntax; `\d`, `\w` and look-arounds are not ERE) or file-name
// search with find (a glob, results sorted by path). `.git`, `node_modules` and credential
// folders and files are never searched. Paging happens in the sandbox (`sed -n 'a,bp;$='` prints
// the page and then the total), so a huge result never crosses the wire.
import { posix } from 'node:path';
import { z } from 'zod';
import { WORKSPACE_PATH, type ExecResult } from '../../sandbox/index.js';
import { defineTool, type ToolContext } from './registry.js';
import { runFileOp } from './file-ops.js';
import { helperFailure, sandboxOf, toolError } from './sandbox-result.js';
import { shq } from './shell-quote.js';
import { protectedReason, resolveWorkspacePath } from './workspace-paths.js';

const SKIP_DIRS = ['.git', 'node_modules', '.ssh', '.aws', '.gnupg', '.kube', '.docker', '.azure', '.password-store', '.hermes'];
const SKIP_FILES = ['.env', '.env.*', '.netrc', '.git-credentials', '.pgpass', '.npmrc', '.pypirc'];
const MAX_MATCH_CHARS = 2_000;
const BAD_REGEX = 80;
const MAX_LIMIT = 1_000;
const MAX_PATTERN_CHARS = 10_000;
const MAX_GLOB_CHARS = 1_000;
/** The most characters one page may bring back from the sandbox. */
const MAX_OUTPUT = 1_000_000;

const schema = z.object({
  // Bounded so the script (the pattern is in it twice) stays under Linux's 128 KiB per argument:
  // a longer one came back "degraded … retry later", as if the sandbox had failed.
  pattern: z.string().min(1).max(MAX_PATTERN_CHARS).describe("Regex (extended, grep -E) for content search, or a glob (e.g. '*.py') for file search"),
  target: z.enum(['content', 'files', 'grep', 'find']).optional().describe("'content' searches inside files, 'files' searches file names (default: content)"),
  path: z.string().optional().describe('Folder or file to search in (default: /workspace)'),
  file_glob: z.string().max(MAX_GLOB_CHARS).optional().describe("Only search files whose name matches this glob (content search, e.g. '*.ts')"),
  limit: z.number().int().optional().describe(`Maximum results to return (default: 50, at most ${MAX_LIMIT})`),
  offset: z.number().int().optional().describe('Skip the first N results (default: 0)'),
  output_mode: z.enum(['content', 'files_only', 'count']).optional().describe("Content search: 'content' (matching lines with numbers), 'files_only' (paths), 'count' (matches per file)"),
  context: z.number().int().min(0).max(20).optional().describe('Lines of context before and after each match (content search)'),
}).strict();

type Args = z.infer<typeof schema>;

const page = (offset: number, limit: number) => `sed -n '${offset + 1},${offset + limit}p;$='`;
const abs = (p: string) => posix.join(WORKSPACE_PATH, p);

/** `dir` is the script's own, already quoted: `"$f"`, the place runFileOp resolved. */
function grepCommand(args: Args, dir: string, offset: number, limit: number): string {
  const mode = args.output_mode ?? 'content';
  // -D skip: a FIFO or device in the workspace must not hang the search.
  const flags = `-D skip ${mode === 'files_only' ? '-rlIE' : mode === 'count' ? '-rcIE' : `-rnIE${args.context ? ` -C ${args.context}` : ''}`}`;
  // --include first: grep then skips files it does not match; the later --exclude still wins for credentials.
  const excludes = [...(args.file_glob ? [`--include=${shq(args.file_glob, 'file_glob')}`] : []), ...SKIP_DIRS.map((d) => `--exclude-dir=${shq(d)}`), ...SKIP_FILES.map((f) => `--exclude=${shq(f)}`)].join(' ');
  const pat = shq(args.pattern, 'pattern');
  const check = `grep -E -e ${pat} </dev/null >/dev/null 2>&1; [ $? -ne 2 ] || { grep -E -e ${pat} </dev/null 2>&1; exit ${BAD_REGEX}; }`;
  const tail = mode === 'count' ? `cut -b 1-${MAX_MATCH_CHARS * 2}` : `${page(offset, limit)} | cut -b 1-${MAX_MATCH_CHARS * 4}`;
  const nul = mode === 'files_only' ? '' : ' --null';
  return `${check}\ngrep -H ${flags}${nul} ${excludes} -e ${pat} -- ${dir} 2>/dev/null | ${tail}`;
}

function findCommand(args: Args, dir: string, offset: number, limit: number): string {
  const prune = SKIP_DIRS.map((d) => `-name ${shq(d)}`).join(' -o ');
  const test = args.pattern.includes('/') ? `-path ${shq(args.pattern.startsWith('./') || args.pattern.startsWith('*') ? args.pattern : `*/${args.pattern}`, 'pattern')}` : `-name ${shq(args.pattern, 'pattern')}`;
  const skip = SKIP_FILES.map((f) => `! -name ${shq(f)}`).join(' ');
  return `find ${dir} \\( ${prune} \\) -prune -o -type f ${test} ${skip} -print 2>/dev/null | LC_ALL=C sort | ${page(offset, limit)}`;
}

/** Splits a paged output into its lines and the total sed printed last. */
function paged(output: string): { lines: string[]; total: number } {
  const lines = output.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const last = lines.at(-1);
  if (last === undefined || !/^\d+$/.test(last)) return { lines, total: lines.length };
  lines.pop();
  return { lines, total: Number(last) };
}

const visible = (p: string) => !protectedReason(p);

function shapeFiles(output: string): Record<string, unknown> {
  const p = paged(output);
  return { total_count: p.total, files: p.lines.map(abs).filter(visible) };
}

function shapeContent(args: Args, output: string, offset: number): Record<string, unknown> {
  const mode = args.output_mode ?? 'content';
  if (mode === 'count') {
    const counts = output.split('\n').filter(Boolean).map((l) => { const [p = '', c = '0'] = l.split('\0'); return { path: abs(p), count: Number(c) }; }).filter((c) => c.count > 0 && visible(c.path));
    const limit = Math.max(1, Math.min(args.limit ?? 50, MAX_LIMIT));
    return { total_count: counts.length, counts: counts.slice(offset, offset + limit), truncated: counts.length > offset + limit };
  }
  const { lines, total } = paged(output);
  if (mode === 'files_only') return { total_count: total, files: lines.map(abs).filter(visible) };
  const matches = lines.filter((l) => l !== '--').map((l) => {
    const cut = l.indexOf('\0');
    const m = /^(\d+)([:-])([\s\S]*)$/.exec(l.slice(cut + 1)) ?? ['', '0', ':', l.slice(cut + 1)];
    const text = m[3]!;
    const content = text.length > MAX_MATCH_CHARS ? `${text.slice(0, MAX_MATCH_CHARS)}... [truncated]` : text;
    return { path: abs(l.slice(0, Math.max(0, cut))), line: Number(m[1]), content, ...(m[2] === '-' ? { context: true } : {}) };
  }).filter((m) => visible(m.path));
  return { total_count: total, matches };
}

/** The error result for a search that did not give a page, or undefined. */
function searchFailure(r: ExecResult, pattern: string): string | undefined {
  const failed = helperFailure(r, 'search_files');
  if (failed) return failed;
  if (r.exitCode === BAD_REGEX) return toolError(`invalid regular expression ${JSON.stringify(pattern)} (grep -E): ${r.output.trim().slice(0, 300)}`);
  if (r.exitCode !== 0) return toolError(`search failed (exit ${r.exitCode}): ${r.output.slice(0, 300)}`);
  if (r.truncated) return toolError(`This page of results is over ${MAX_OUTPUT.toLocaleString('en-US')} characters; ask for a smaller limit, or narrow the pattern, path or file_glob.`);
  return undefined;
}

/** The script, or why the arguments cannot be put on a command line (NUL). */
function buildCommand(args: Args, files: boolean, dir: string, offset: number, limit: number): { ok: true; command: string } | { ok: false; error: string } {
  try {
    return { ok: true, command: files ? findCommand(args, dir, offset, limit) : grepCommand(args, dir, offset, limit) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

async function search(args: Args, ctx: ToolContext): Promise<string> {
  const box = sandboxOf(ctx);
  if ('error' in box) return box.error;
  const where = resolveWorkspacePath(args.path ?? WORKSPACE_PATH);
  if (!where.ok) return toolError(where.error);
  const files = args.target === 'files' || args.target === 'find';
  // Clamped as Hermes does (normalize_search_pagination) rather than refused.
  const offset = Math.max(0, args.offset ?? 0);
  const limit = Math.max(1, Math.min(args.limit ?? 50, MAX_LIMIT));
  const command = buildCommand(args, files, '"$f"', offset, limit);
  if (!command.ok) return toolError(command.error);
  // Through runFileOp like the other file tools: a path that goes through a symbolic link is
  // searched only where the link leads inside /workspace (and not onto a credential).
  const op = await runFileOp({ sandbox: box.sandbox, signal: ctx.signal, path: where.path, what: 'search_files', body: command.command, maxOutputChars: MAX_OUTPUT });
  if (!op.ok) return op.error;
  const r = op.result;
  const failed = searchFailure(r, args.pattern);
  if (failed) return failed;
  const out: Record<string, unknown> = files ? shapeFiles(r.output) : shapeContent(args, r.output, offset);
  const total = Number(out.total_count ?? 0);
  const truncated = (out.truncated as boolean | undefined) ?? total > offset + limit;
  return JSON.stringify({ ...out, truncated, ...(truncated ? { hint: `Results truncated. Use offset=${offset + limit} to see more, or narrow with a more specific pattern or file_glob.` } : {}) });
}

export const searchFilesTool = defineTool({
  name: 'search_files',
  description: "Search file contents (target='content': extended regex, matching lines with line numbers, file paths only, or counts) or find files by name (target='files': a glob such as '*.py'). Use this instead of grep/find/ls in terminal. .git, node_modules and credential files are skipped.",
  toolset: 'file',
  sideEffect: 'read-only',
  schema,
  handler: search,
});
