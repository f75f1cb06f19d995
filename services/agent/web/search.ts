// Web search providers (Profile spec.web.search): SearXNG (self-hosted, JSON API), Tavily and
// Brave. Each is one guarded HTTP call (the provider's URL passes the SSRF guard too: an in-cluster
// SearXNG needs its range in HERMES_WEB_ALLOW_CIDRS) answered as the same result list. The API
// key is read by reference in the worker and sent only to the provider; it never reaches a
// sandbox, the model or an error text.
import { z } from 'zod';
import type { FetchedPage, FetchRequest } from './fetch.js';

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export type SearchProviderName = 'searxng' | 'tavily' | 'brave';

export interface SearchSettings {
  provider: SearchProviderName;
  /** Base URL (required for SearXNG; the public API for the others). */
  url?: string;
  apiKey?: string;
}

/** One guarded request (guardedFetch bound to the turn's guard, limits and signal). */
export type Http = (url: string, request?: FetchRequest) => Promise<FetchedPage>;

export class SearchFailed extends Error {
  override name = 'SearchFailed';
}

const defaults: Record<SearchProviderName, string | undefined> = {
  searxng: undefined,
  tavily: 'https://api.tavily.com',
  brave: 'https://api.search.brave.com',
};

const searxngAnswer = z.object({ results: z.array(z.object({ title: z.string().default(''), url: z.string(), content: z.string().default('') })).default([]) });
const tavilyAnswer = z.object({ results: z.array(z.object({ title: z.string().default(''), url: z.string(), content: z.string().default('') })).default([]) });
const braveAnswer = z.object({ web: z.object({ results: z.array(z.object({ title: z.string().default(''), url: z.string(), description: z.string().default('') })).default([]) }).default({ results: [] }) });

const base = (s: SearchSettings) => {
  const url = s.url ?? defaults[s.provider];
  if (!url) throw new SearchFailed(`web search provider ${s.provider} needs a url (Profile spec.web.search.url)`);
  return url.replace(/\/+$/, '');
};

function answerOf(page: FetchedPage, provider: string): unknown {
  if (page.status === 401 || page.status === 403) throw new SearchFailed(`${provider} refused the API key (HTTP ${page.status})`);
  if (page.status === 429) throw new SearchFailed(`${provider} is rate-limiting this key (HTTP 429); try again later`);
  if (page.status < 200 || page.status >= 300) throw new SearchFailed(`${provider} answered HTTP ${page.status}`);
  try {
    return JSON.parse(page.body.toString('utf8'));
  } catch {
    throw new SearchFailed(`${provider} answered something that is not JSON`);
  }
}

function parsed<T>(schema: z.ZodType<T>, value: unknown, provider: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new SearchFailed(`${provider} answered in an unexpected shape`);
  return r.data;
}

const needKey = (s: SearchSettings): string => {
  if (!s.apiKey) throw new SearchFailed(`web search provider ${s.provider} needs an API key (Profile spec.web.search.apiKey) and none resolved`);
  return s.apiKey;
};

export async function webSearch(settings: SearchSettings, http: Http, query: string, limit: number): Promise<SearchResult[]> {
  const root = base(settings);
  switch (settings.provider) {
    case 'searxng': {
      const page = await http(`${root}/search?${new URLSearchParams({ q: query, format: 'json' })}`, { headers: { accept: 'application/json' } });
      return parsed(searxngAnswer, answerOf(page, 'SearXNG'), 'SearXNG').results.slice(0, limit).map((r) => ({ title: r.title, url: r.url, snippet: r.content }));
    }
    case 'tavily': {
      const page = await http(`${root}/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${needKey(settings)}` },
        body: JSON.stringify({ query, max_results: limit, search_depth: 'basic' }),
      });
      return parsed(tavilyAnswer, answerOf(page, 'Tavily'), 'Tavily').results.slice(0, limit).map((r) => ({ title: r.title, url: r.url, snippet: r.content }));
    }
    case 'brave': {
      const page = await http(`${root}/res/v1/web/search?${new URLSearchParams({ q: query, count: String(limit) })}`, {
        headers: { accept: 'application/json', 'x-subscription-token': needKey(settings) },
      });
      return parsed(braveAnswer, answerOf(page, 'Brave'), 'Brave').web.results.slice(0, limit).map((r) => ({ title: r.title, url: r.url, snippet: r.description }));
    }
  }
}
