// `read_tool_result`: pages through a tool result that was too big for the context and was
// stored (see results.ts). Read-only, scoped to the session that stored it, and never spilled
// itself: a page is at most its `limit` characters plus a one-line header.
import { z } from 'zod';
import { defineTool } from './registry.js';
import { MAX_READ_PAGE_CHARS, READ_PAGE_CHARS, READ_TOOL_RESULT, type StoredResultPage } from './results.js';

const refusal = (id: string, page: Extract<StoredResultPage, { ok: false }>) => JSON.stringify({
  error: page.reason === 'other_session'
    ? `Stored result ${id} belongs to another session; only results stored in this session can be read.`
    : `No stored result ${id} in this session; use the id from a <tool-result-preview> block of this conversation.`,
});

/** The header line, then the page exactly as stored. */
function pageText(id: string, page: Extract<StoredResultPage, { ok: true }>): string {
  const end = page.offset + page.text.length;
  const next = end < page.size ? `; ${page.size - end} more, continue with "offset": ${end}` : '; this is the end';
  return `[stored result ${id} of ${page.toolName}: characters ${page.offset}–${end} of ${page.size}${next}]\n${page.text}`;
}

export const readToolResultTool = defineTool({
  name: READ_TOOL_RESULT,
  description: `Reads a tool result that was too large to show in full and was stored: give the id from its <tool-result-preview> block and page through it with offset and limit (in characters). Only results stored in this conversation can be read.`,
  toolset: 'stored-results',
  sideEffect: 'read-only',
  schema: z.object({
    id: z.string().min(1).describe('the id named in the <tool-result-preview> block'),
    offset: z.number().int().min(0).optional().describe('first character to read; default 0'),
    limit: z.number().int().min(1).max(MAX_READ_PAGE_CHARS).optional().describe(`characters to read; default ${READ_PAGE_CHARS}, at most ${MAX_READ_PAGE_CHARS}`),
  }).strict(),
  handler: async ({ id, offset = 0, limit = READ_PAGE_CHARS }, ctx) => {
    if (!ctx.storedResults) return JSON.stringify({ error: 'Stored tool results cannot be read here.' });
    const page = await ctx.storedResults.read(id, offset, limit);
    if (!page.ok) return refusal(id, page);
    if (offset > 0 && offset >= page.size) return JSON.stringify({ error: `offset ${offset} is past the end of stored result ${id} (${page.size} characters).` });
    return pageText(id, page);
  },
});
