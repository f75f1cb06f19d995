// web_search and web_extract (Hermes' `web` toolset). Search goes to the Profile's provider;
// extract fetches up to 5 URLs through the SSRF guard (ToolContext.web), turns each into
// Markdown or text, and hands long pages (above 5 000 characters) to the auxiliary model for a
// digest as Hermes does — cut at the page limit when no summary can be had. One URL's failure is
// that URL's error in the result, not the call's.
import { z } from 'zod';
import { UrlRefused } from '../web/ssrf.js';
import type { ExtractedPage, WebAccess } from '../web/access.js';
import { defineTool, type ToolContext } from './registry.js';

const noWeb = 'Web access is not configured for this agent.';

export const webSearchTool = defineTool({
  name: 'web_search',
  description: 'Search the web. Returns up to `limit` results (title, url, snippet). Use web_extract to read a result.',
  toolset: 'web',
  sideEffect: 'read-only',
  schema: z.object({
    query: z.string().min(1).max(500).describe('What to search for.'),
    limit: z.number().int().min(1).max(10).default(5).describe('How many results (1–10).'),
  }).strict(),
  handler: async ({ query, limit }, ctx) => {
    if (!ctx.web?.search) return JSON.stringify({ error: `${noWeb} (no search provider in the Profile's spec.web.search)` });
    try {
      return JSON.stringify({ query, results: await ctx.web.search(query, limit, ctx.signal) });
    } catch (err) {
      return JSON.stringify({ query, error: (err as Error).message });
    }
  },
});

/** The page as the model gets it: whole, summarised, or cut at the limit. */
async function forModel(web: WebAccess, page: ExtractedPage, signal: AbortSignal): Promise<Record<string, unknown>> {
  const head = { url: page.url, ...(page.title ? { title: page.title } : {}), kind: page.kind, chars: page.content.length };
  const note = page.truncated ? ' (the download stopped at the size limit)' : '';
  if (page.content.length <= web.summariseAboveChars) return { ...head, content: page.content, ...(note ? { note: note.trim() } : {}) };
  if (web.summarise) {
    try {
      const summary = await web.summarise(page.content.slice(0, web.maxChars * 10), { url: page.url, ...(page.title ? { title: page.title } : {}) }, signal);
      return { ...head, summarised: true, content: summary.slice(0, web.maxChars), ...(note ? { note: note.trim() } : {}) };
    } catch (err) {
      signal.throwIfAborted();
      const cut = page.content.slice(0, web.maxChars);
      return { ...head, content: cut, note: `summary unavailable (${(err as Error).message}); ${cut.length < page.content.length ? `cut at ${web.maxChars} characters` : 'shown whole'}${note}` };
    }
  }
  const cut = page.content.slice(0, web.maxChars);
  return { ...head, content: cut, ...(cut.length < page.content.length || note ? { note: `${cut.length < page.content.length ? `cut at ${web.maxChars} characters` : ''}${note}`.trim() } : {}) };
}

async function extractOne(web: WebAccess, url: string, ctx: ToolContext): Promise<Record<string, unknown>> {
  try {
    return await forModel(web, await web.extract(url, ctx.signal), ctx.signal);
  } catch (err) {
    ctx.signal.throwIfAborted();
    if (err instanceof UrlRefused) return { url, error: `blocked: ${err.reason}` };
    return { url, error: (err as Error).message };
  }
}

export const webExtractTool = defineTool({
  name: 'web_extract',
  description: 'Read web pages (HTML as Markdown, PDFs as text). At most 5 URLs per call; long pages come back summarised. Private and internal addresses are blocked.',
  toolset: 'web',
  sideEffect: 'read-only',
  schema: z.object({
    urls: z.array(z.string().min(1).max(2_048)).min(1).max(5).describe('The pages to read (http or https, at most 5).'),
  }).strict(),
  handler: async ({ urls }, ctx) => {
    const web = ctx.web;
    if (!web) return JSON.stringify({ error: noWeb });
    const results = await Promise.all(urls.map((u) => extractOne(web, u, ctx)));
    return JSON.stringify({ results });
  },
});
