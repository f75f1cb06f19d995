// Classifying provider failures into what the loop should do next. Works on the error shapes of
// both official SDKs (`status`, `headers`, `error` body, `name`) without importing either.
import { commandWord } from '../core/index.js';
export type ErrorReason =
  | 'auth' | 'billing' | 'timeout' | 'payload_too_large' | 'rate_limit' | 'server_error' | 'overloaded'
  | 'context_overflow' | 'content_policy' | 'malformed' | 'connection' | 'stream' | 'bad_request' | 'unknown';

export interface ClassifiedError {
  reason: ErrorReason;
  status?: number;
  /** Worth another attempt on the same model and key (after a backoff). */
  retryable: boolean;
  shouldCompress: boolean;
  shouldRotateCredential: boolean;
  shouldFallback: boolean;
  /** Retry-After from the provider, capped (ms). */
  retryAfterMs?: number;
  message: string;
}

/** A stream that broke or went stale after the response began. Providers throw this. */
export class StreamError extends Error {
  override name = 'StreamError';
  constructor(message: string, readonly stale = false) {
    super(message);
  }
}

export const RETRY_AFTER_CAP_MS = 600_000;
const CONTEXT_OVERFLOW = /context[ _]length|maximum context|context window|too many tokens|prompt is too long|context_length_exceeded|input is too long/i;
const CONTENT_POLICY = /content[ _]policy|content_filter|content management policy|safety system|flagged/i;
const BILLING = /insufficient_quota|billing|credit balance|payment required|quota exceeded/i;

type ErrorLike = { status?: unknown; message?: unknown; name?: unknown; headers?: unknown; error?: unknown; code?: unknown };

function header(headers: unknown, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const v = (headers as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : undefined;
}

/** Retry-After / retry-after-ms as milliseconds (capped at 600 s), or undefined. */
export function retryAfterMs(headers: unknown, now = Date.now()): number | undefined {
  const ms = header(headers, 'retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.min(Math.max(0, Number(ms)), RETRY_AFTER_CAP_MS);
  const ra = header(headers, 'retry-after');
  if (!ra) return undefined;
  const secs = Number(ra);
  const value = Number.isFinite(secs) ? secs * 1_000 : Date.parse(ra) - now;
  return Number.isFinite(value) ? Math.min(Math.max(0, value), RETRY_AFTER_CAP_MS) : undefined;
}

const cls = (reason: ErrorReason, f: Partial<ClassifiedError>, message: string, status?: number): ClassifiedError => ({
  reason, retryable: false, shouldCompress: false, shouldRotateCredential: false, shouldFallback: false, message,
  ...(status !== undefined ? { status } : {}), ...f,
});

type Flags = Partial<ClassifiedError>;
const RETRY_FALLBACK: Flags = { retryable: true, shouldFallback: true };
const ROTATE_FALLBACK: Flags = { shouldRotateCredential: true, shouldFallback: true };
const BY_STATUS: Record<number, [ErrorReason, Flags]> = {
  401: ['auth', ROTATE_FALLBACK],
  402: ['billing', ROTATE_FALLBACK],
  403: ['auth', ROTATE_FALLBACK],
  408: ['timeout', RETRY_FALLBACK],
  413: ['payload_too_large', { shouldCompress: true }],
  429: ['rate_limit', { retryable: true, shouldRotateCredential: true, shouldFallback: true }],
  500: ['server_error', RETRY_FALLBACK],
  502: ['server_error', RETRY_FALLBACK],
  503: ['overloaded', RETRY_FALLBACK],
  529: ['overloaded', RETRY_FALLBACK],
};

function byStatus(status: number, text: string): ClassifiedError {
  if (CONTENT_POLICY.test(text)) return cls('content_policy', {}, text, status);
  if (CONTEXT_OVERFLOW.test(text) && [400, 413, 422].includes(status)) return cls('context_overflow', { shouldCompress: true }, text, status);
  if (status === 429 && BILLING.test(text)) return cls('billing', ROTATE_FALLBACK, text, status);
  const known = BY_STATUS[status];
  if (known) return cls(known[0], known[1], text, status);
  return status >= 500 ? cls('server_error', RETRY_FALLBACK, text, status) : cls('bad_request', {}, text, status);
}

/** Failures without an HTTP status: broken streams, bad bodies, network errors, by message. */
function withoutStatus(err: unknown, name: string, text: string): ClassifiedError {
  if (err instanceof StreamError) return cls('stream', RETRY_FALLBACK, text);
  if (err instanceof SyntaxError || /malformed|unexpected token|invalid json|could not parse/i.test(text)) return cls('malformed', RETRY_FALLBACK, text);
  if (/timeout|timed out/i.test(name + text)) return cls('timeout', RETRY_FALLBACK, text);
  if (/connection|ECONNRESET|ECONNREFUSED|socket|fetch failed|terminated/i.test(name + text)) return cls('connection', RETRY_FALLBACK, text);
  if (CONTEXT_OVERFLOW.test(text)) return cls('context_overflow', { shouldCompress: true }, text);
  if (CONTENT_POLICY.test(text)) return cls('content_policy', {}, text);
  return cls('unknown', {}, text);
}

export function classifyError(err: unknown, now = Date.now()): ClassifiedError {
  const e = (err ?? {}) as ErrorLike;
  const body = e.error && typeof e.error === 'object' ? JSON.stringify(e.error) : '';
  const message = typeof e.message === 'string' ? e.message : String(err);
  const text = `${message} ${body}`.trim().slice(0, 2_000);
  const name = typeof e.name === 'string' ? e.name : '';
  const out = typeof e.status === 'number' ? byStatus(e.status, text) : withoutStatus(err, name, text);
  const ra = retryAfterMs(e.headers, now);
  return ra === undefined ? out : { ...out, retryAfterMs: ra };
}

/** min(2·2^(n-1), 60) s plus up to 50 % jitter; Retry-After (capped) wins when the provider sent one. */
export function backoffMs(attempt: number, random: number, retryAfter?: number): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, RETRY_AFTER_CAP_MS);
  const base = Math.min(2 * 2 ** (attempt - 1), 60) * 1_000;
  return Math.round(base + random * base * 0.5);
}

/**
 * What the user reads when the model call failed for good. `unattended` (a cron run): read in the
 * CronJob's channel, where nobody sent a message to try again, rephrase or /new — it says what
 * failed and who can mend it; the next run comes at its schedule.
 */
export function userMessageFor(c: ClassifiedError, model: string, platform?: string, unattended = false): string {
  if (unattended) return unattendedMessageFor(c, model);
  switch (c.reason) {
    case 'auth': return `Sorry — the model provider refused our credentials for ${model}. An operator needs to check the API key.`;
    case 'billing': return `Sorry — the model provider reports a billing problem for ${model} (payment or quota). An operator needs to check the account.`;
    case 'content_policy': return 'Sorry — the model provider refused this request under its content policy. Please rephrase it.';
    case 'rate_limit': return `Sorry — the model provider is rate-limiting us on ${model}. Please try again in a moment.`;
    case 'context_overflow': case 'payload_too_large': return `Sorry — this conversation is too long for the model even after compression. Start a new one with ${commandWord(platform, 'new')}.`;
    case 'overloaded': case 'server_error': case 'timeout': case 'connection': case 'stream':
      return `Sorry — the model provider (${model}) is unavailable right now (${c.reason.replace('_', ' ')}). Please try again later.`;
    default: return 'Sorry — the model could not answer this time. Please try again.';
  }
}

function unattendedMessageFor(c: ClassifiedError, model: string): string {
  switch (c.reason) {
    case 'auth': return `This run failed: the model provider refused our credentials for ${model}. An operator needs to check the API key.`;
    case 'billing': return `This run failed: the model provider reports a billing problem for ${model} (payment or quota). An operator needs to check the account.`;
    case 'content_policy': return `This run failed: the model provider refused its prompt under its content policy. Its CronJob's prompt needs changing.`;
    case 'rate_limit': return `This run failed: the model provider was rate-limiting us on ${model}.`;
    case 'context_overflow': case 'payload_too_large': return `This run failed: its prompt is too long for ${model}. Its CronJob's prompt or context needs shortening.`;
    case 'overloaded': case 'server_error': case 'timeout': case 'connection': case 'stream':
      return `This run failed: the model provider (${model}) was unavailable (${c.reason.replace('_', ' ')}).`;
    default: return `This run failed: the model (${model}) gave no usable answer.`;
  }
}
