// Replies to Teams through the Bot Framework connector REST API:
//   POST {connector}/v3/conversations/{conversationId}/activities       (send; a channel thread's
//        conversation id carries `;messageid=<root>`, so the reply lands in the thread)
//   PUT  {connector}/v3/conversations/{conversationId}/activities/{id}  (edit)
//   POST {connector}/v3/conversations/{conversationId}/activities       ({type:'typing'}: "typing…" while a turn runs)
// with `Authorization: Bearer <token>`, the token from the Microsoft identity platform by client
// credentials (TEAMS_APP_ID / TEAMS_APP_PASSWORD at <login>/<TEAMS_TENANT_ID>/oauth2/v2.0/token,
// scope https://api.botframework.com/.default), cached until TOKEN_EARLY_SECONDS before it expires.
//
// Where the bot token goes: the connector is the serviceUrl of the activity being answered. It is
// written into the reply target by the gateway only after the activity's JWT verified and its
// `serviceurl` claim matched (teams/activity.ts), and it must be https. An install (or an Agent's
// platform apiUrl) may instead name one connector for every reply (HERMES_TEAMS_API_URL: an egress
// proxy, or a test server); then the activity's serviceUrl is not used at all.
//
// A 429 is RateLimited with the connector's Retry-After (the ledger waits, no attempt spent); a
// 401/403 drops the cached token so the next attempt gets a fresh one; a conversation that is gone
// or closed to the bot (a 403 or 404 naming one of TEAMS_GONE) is Undeliverable: the ledger gives up at once.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { withDeadline } from '../../core/deadline.js';
import { RateLimited, Undeliverable, splitMessage, type PlatformSender, type ReplyTarget, type SentMessage } from '../adapter.js';

/**
 * Teams refuses a message over about 28 KB (the whole activity, UTF-8). 8 000 UTF-16 units are at
 * most 24 000 bytes of UTF-8 whatever the script (3 bytes per unit at worst), leaving room for the
 * activity's envelope and JSON escaping.
 */
export const TEAMS_MAX_MESSAGE_CHARS = 8_000;
/** The token is renewed this long before Microsoft's expiry. */
const TOKEN_EARLY_SECONDS = 300;
/** Bound on cached tokens (one per app id, tenant and password). */
const MAX_TOKENS = 256;
/** Longest in-process wait for a rate limit hit between the pieces of one split reply. */
const MAX_PIECE_WAIT_SECONDS = 30;
export const TEAMS_SCOPE = 'https://api.botframework.com/.default';
/** Multi-tenant bots get their token from this tenant (when TEAMS_TENANT_ID is not set). */
export const TEAMS_DEFAULT_TENANT = 'botframework.com';

export const teamsTargetSchema = z.object({ kind: z.literal('teams'), serviceUrl: z.string().url(), conversationId: z.string().min(1), tenantId: z.string().optional() });

export interface TeamsCredentials { appId: string; password: string; tenantId?: string }

const tokenSchema = z.object({ access_token: z.string().min(1), expires_in: z.coerce.number().positive() }).passthrough();

/** Client-credentials tokens of Teams bots, cached until shortly before they expire. */
export class TeamsTokens {
  private readonly cache = new Map<string, { token: string; until: number }>();

  constructor(private readonly opts: { loginUrl: string; now?: () => number; timeoutMs?: number }) {}

  private key(c: TeamsCredentials): string {
    return `${c.tenantId ?? TEAMS_DEFAULT_TENANT}|${c.appId}|${createHash('sha256').update(c.password).digest('hex')}`;
  }

  forget(c: TeamsCredentials): void {
    this.cache.delete(this.key(c));
  }

  /** A token for `c`: the cached one, or a new one from the token endpoint. */
  async token(c: TeamsCredentials, signal: AbortSignal): Promise<string> {
    const now = (this.opts.now ?? Date.now)();
    const key = this.key(c);
    const hit = this.cache.get(key);
    if (hit && hit.until > now) return hit.token;
    const tenant = encodeURIComponent(c.tenantId ?? TEAMS_DEFAULT_TENANT);
    const deadline = withDeadline(signal, this.opts.timeoutMs ?? 30_000);
    let res: Response;
    let body: Record<string, unknown>;
    try {
      res = await fetch(`${this.opts.loginUrl.replace(/\/+$/, '')}/${tenant}/oauth2/v2.0/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.appId, client_secret: c.password, scope: TEAMS_SCOPE }),
        signal: deadline.signal,
      });
      body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    } finally {
      deadline.clear();
    }
    if (!res.ok) {
      // Microsoft's `error` (invalid_client, unauthorized_client, …) names the problem; the description may quote ids, not secrets.
      throw new Error(`the Microsoft identity platform refused the Teams app credentials (HTTP ${res.status}${typeof body.error === 'string' ? `, ${body.error}` : ''}): check TEAMS_APP_ID, TEAMS_APP_PASSWORD and TEAMS_TENANT_ID`);
    }
    const t = tokenSchema.parse(body);
    const lifetime = t.expires_in > 2 * TOKEN_EARLY_SECONDS ? t.expires_in - TOKEN_EARLY_SECONDS : t.expires_in / 2;
    if (this.cache.size >= MAX_TOKENS) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { token: t.access_token, until: now + lifetime * 1_000 });
    return t.access_token;
  }
}

export interface TeamsSenderOptions {
  credentials: TeamsCredentials;
  tokens: TeamsTokens;
  /** One connector for every reply (HERMES_TEAMS_API_URL or the platform's apiUrl); absent: the target's serviceUrl. */
  apiUrl?: string;
  /** Bound on one HTTP call. @defaultValue 30 000 */
  timeoutMs?: number;
}

/** Seconds from a Retry-After header (delta-seconds or an HTTP date); 1 when absent or unreadable. */
export function retryAfterSeconds(header: string | null, nowMs = Date.now()): number {
  if (!header) return 1;
  if (/^\d+$/.test(header.trim())) return Math.max(1, Number(header.trim()));
  const at = Date.parse(header);
  return Number.isNaN(at) ? 1 : Math.max(1, Math.ceil((at - nowMs) / 1_000));
}

/**
 * Bot Framework error codes (of a 403 or 404) that say the conversation is gone or closed to the
 * bot. A bare 404 or 403 may be a wrong connector URL or a token problem an operator can mend: retried.
 */
const TEAMS_GONE = /ConversationNotFound|BotNotInConversationRoster|ConversationBlockedByUser|BotDisabledByAdmin/;

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason as Error); }, { once: true });
});

export class TeamsSender implements PlatformSender {
  readonly maxMessageChars = TEAMS_MAX_MESSAGE_CHARS;
  constructor(private readonly opts: TeamsSenderOptions) {}

  /** The connector base for `target`: the configured one, else the activity's serviceUrl (https only). */
  connector(target: z.infer<typeof teamsTargetSchema>): string {
    const base = this.opts.apiUrl ?? target.serviceUrl;
    if (!this.opts.apiUrl && new URL(base).protocol !== 'https:') throw new Error(`the Teams serviceUrl ${base} is not https: the bot token is not sent there (set HERMES_TEAMS_API_URL to use another connector)`);
    return base.replace(/\/+$/, '');
  }

  private async call(method: 'POST' | 'PUT', url: string, body: unknown, signal: AbortSignal): Promise<Record<string, unknown>> {
    const token = await this.opts.tokens.token(this.opts.credentials, signal);
    const deadline = withDeadline(signal, this.opts.timeoutMs ?? 30_000);
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: deadline.signal,
      });
      if (res.status === 429) throw new RateLimited(retryAfterSeconds(res.headers.get('retry-after')), 'Teams connector');
      text = await res.text();
    } finally {
      deadline.clear();
    }
    if (res.status === 401 || res.status === 403) this.opts.tokens.forget(this.opts.credentials);
    if (!res.ok) {
      const message = `the Teams connector answered HTTP ${res.status} to ${method} ${new URL(url).pathname}: ${text.slice(0, 200)}`;
      throw (res.status === 403 || res.status === 404) && TEAMS_GONE.test(text) ? new Undeliverable(message) : new Error(message);
    }
    try {
      return text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }

  private activities(target: z.infer<typeof teamsTargetSchema>): string {
    return `${this.connector(target)}/v3/conversations/${encodeURIComponent(target.conversationId)}/activities`;
  }

  /**
   * Posts the pieces in order. A 429 on the first piece is RateLimited (the ledger defers the whole
   * reply, nothing was sent); on a later piece we wait Retry-After here (bounded), so pieces already
   * posted are not sent again by the ledger's retry.
   */
  async send(target: ReplyTarget, text: string, signal: AbortSignal): Promise<SentMessage[]> {
    const t = teamsTargetSchema.parse(target);
    if (!text.trim()) return [];
    const url = this.activities(t);
    const sent: SentMessage[] = [];
    for (const piece of splitMessage(text, this.maxMessageChars)) {
      for (;;) {
        try {
          const res = await this.call('POST', url, { type: 'message', text: piece, textFormat: 'markdown' }, signal);
          sent.push({ id: typeof res.id === 'string' ? res.id : '' });
          break;
        } catch (err) {
          if (!(err instanceof RateLimited)) throw err;
          if (sent.length === 0 || err.retryAfterSeconds > MAX_PIECE_WAIT_SECONDS) throw err;
          await sleep(err.retryAfterSeconds * 1_000, signal);
        }
      }
    }
    return sent;
  }

  /** A `typing` activity: Teams shows the bot typing for a few seconds, or until its next message. */
  async typing(target: ReplyTarget, signal: AbortSignal): Promise<void> {
    const t = teamsTargetSchema.parse(target);
    await this.call('POST', this.activities(t), { type: 'typing' }, signal);
  }

  async edit(target: ReplyTarget, message: SentMessage, text: string, signal: AbortSignal): Promise<void> {
    const t = teamsTargetSchema.parse(target);
    await this.call('PUT', `${this.activities(t)}/${encodeURIComponent(message.id)}`, { type: 'message', id: message.id, text: text.slice(0, this.maxMessageChars), textFormat: 'markdown' }, signal);
  }
}
