// Discord's REST API over fetch (undici): the base URL is configurable (HERMES_DISCORD_API_URL or
// the platform's apiUrl, default https://discord.com/api/v10), so tests and egress proxies can
// point it elsewhere. No retries and no in-process rate-limit queue: a 429 becomes RateLimited
// (`retry_after` from the body, else Retry-After), and the delivery ledger waits without spending
// an attempt. Bot-authenticated calls send `Authorization: Bot <token>`; interaction webhooks are
// authenticated by the token in their path and send none.
import { withDeadline } from '../../core/deadline.js';
import { RateLimited } from '../adapter.js';

export const DISCORD_DEFAULT_API_URL = 'https://discord.com/api/v10';

/** A non-2xx answer from Discord other than 429: its status, Discord's error code and message. */
export class DiscordApiError extends Error {
  override name = 'DiscordApiError';
  constructor(readonly status: number, readonly code: number | undefined, detail: string) {
    super(`Discord answered ${status}${code !== undefined ? ` (code ${code})` : ''}: ${detail}`);
  }
}

export interface DiscordRestOptions {
  /** The API base, e.g. https://discord.com/api/v10 (no trailing slash needed). */
  apiUrl: string;
  /** The bot token, for calls made as the bot. */
  token?: string;
  /** Bound on one HTTP call. @defaultValue 30 000 */
  timeoutMs?: number;
}

export interface RequestOptions {
  body?: unknown;
  signal?: AbortSignal;
  /** Send the bot token (false for interaction webhooks). @defaultValue true */
  asBot?: boolean;
}

function retryAfterSeconds(res: Response, body: unknown): number {
  const fromBody = (body as { retry_after?: unknown } | undefined)?.retry_after;
  const seconds = typeof fromBody === 'number' ? fromBody : Number(res.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds) : 1;
}

async function readJson(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { message: text.slice(0, 200) };
  }
}

export class DiscordRest {
  private readonly base: string;
  constructor(private readonly opts: DiscordRestOptions) {
    this.base = opts.apiUrl.replace(/\/+$/, '');
  }

  private headers(o: RequestOptions): Record<string, string> {
    const headers: Record<string, string> = { 'user-agent': 'DiscordBot (https://hermes.dev, 1) hermes-operator' };
    if (o.asBot ?? true) {
      if (!this.opts.token) throw new Error('no bot token (DISCORD_BOT_TOKEN) for a call made as the bot');
      headers.authorization = `Bot ${this.opts.token}`;
    }
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    return headers;
  }

  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const headers = this.headers(o);
    const deadline = withDeadline(o.signal, this.opts.timeoutMs ?? 30_000);
    let res: Response;
    let body: unknown;
    try {
      res = await fetch(`${this.base}${path}`, {
        method, headers, ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
        signal: deadline.signal,
      });
      body = await readJson(res);
    } finally {
      deadline.clear();
    }
    if (res.status === 429) {
      const global = (body as { global?: boolean } | undefined)?.global === true;
      throw new RateLimited(retryAfterSeconds(res, body), global ? 'global Discord rate limit' : `${method} ${path.replace(/\/webhooks\/(\d+)\/[^/]+/, '/webhooks/$1/<token>')}`);
    }
    if (!res.ok) {
      const err = body as { code?: number; message?: string } | undefined;
      throw new DiscordApiError(res.status, err?.code, err?.message ?? res.statusText);
    }
    return body as T;
  }
}
