// What the web tools reach in a turn (ToolContext.web): search through the Profile's provider,
// guarded page fetches turned into text (off the event loop, within the fetch deadline), and the auxiliary summary of long pages.
import { guardedFetch, type FetchLimits } from './fetch.js';
import { pageTextBounded } from './convert.js';
import type { PageText } from './extract.js';
import { webSearch, type SearchResult, type SearchSettings } from './search.js';
import type { UrlGuard } from './ssrf.js';

export interface ExtractedPage extends PageText {
  /** The URL after redirects. */
  url: string;
  /** The download stopped at the byte limit. */
  truncated: boolean;
}

export interface WebAccess {
  /** Absent: the Profile names no search provider (web_search is then not offered). */
  search?: (query: string, limit: number, signal: AbortSignal) => Promise<SearchResult[]>;
  extract: (url: string, signal: AbortSignal) => Promise<ExtractedPage>;
  /** The auxiliary model's digest of a long page; absent: long pages are cut at `maxChars`. */
  summarise?: (text: string, page: { url: string; title?: string }, signal: AbortSignal) => Promise<string>;
  /** Characters of one page the model gets at most. */
  maxChars: number;
  /** Pages longer than this are summarised (Hermes: 5 000). */
  summariseAboveChars: number;
}

export interface WebAccessOptions {
  guard: UrlGuard;
  limits: FetchLimits;
  /** The provider settings, read when a search runs (the worker resolves the API key then). */
  search?: () => Promise<SearchSettings>;
  summarise?: WebAccess['summarise'];
  maxChars: number;
  summariseAboveChars: number;
}

export function webAccess(o: WebAccessOptions): WebAccess {
  return {
    ...(o.search ? {
      search: async (query: string, limit: number, signal: AbortSignal) =>
        webSearch(await o.search!(), (url, request) => guardedFetch(o.guard, url, o.limits, signal, request), query, limit),
    } : {}),
    async extract(url, signal) {
      const page = await guardedFetch(o.guard, url, o.limits, signal);
      if (page.status < 200 || page.status >= 300) throw new Error(`the server answered HTTP ${page.status}`);
      return { ...(await pageTextBounded(page, { timeoutMs: o.limits.timeoutMs }, signal)), url: page.url, truncated: page.truncated };
    },
    ...(o.summarise ? { summarise: o.summarise } : {}),
    maxChars: o.maxChars,
    summariseAboveChars: o.summariseAboveChars,
  };
}
