// The error catalogue: stable codes, a message a user can act on, and the HTTP status.
import pg from 'pg';

export const errorCatalogue = {
  HERMES_BAD_JSON: { status: 400, message: 'The request body is not valid JSON.' },
  HERMES_BAD_REQUEST: { status: 400, message: 'The request is invalid.' },
  HERMES_UNAUTHENTICATED: { status: 401, message: 'Missing or malformed API key: send "Authorization: Bearer <key>".' },
  HERMES_FORBIDDEN: { status: 403, message: 'This API key may not use this agent.' },
  HERMES_SIGNATURE_INVALID: { status: 401, message: 'The request signature could not be verified: check that the URL names an Agent with this platform and that its Secret holds the app\'s signing secret.' },
  HERMES_AGENT_NOT_FOUND: { status: 404, message: 'No such agent for this API key.' },
  HERMES_ADMISSION_NOT_FOUND: { status: 404, message: 'No such admission.' },
  HERMES_RESPONSE_NOT_FOUND: { status: 404, message: 'No such response for this API key.' },
  HERMES_RUN_NOT_FOUND: { status: 404, message: 'No such run for this API key.' },
  HERMES_SESSION_NOT_FOUND: { status: 404, message: 'No such session for this API key.' },
  HERMES_IDEMPOTENCY_CONFLICT: { status: 409, message: 'This Idempotency-Key was already used with a different request; send a new key for a new request.' },
  HERMES_TOO_MANY_WAITS: { status: 429, message: 'Too many replies and event streams are waiting for this API key at once.' },
  HERMES_CONVERSATION_FULL: { status: 429, message: 'This message was not queued: its conversation is full.' },
  HERMES_PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  HERMES_UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Send Content-Type: application/json.' },
  HERMES_PLATFORM_SECRETS_UNAVAILABLE: { status: 503, message: 'The gateway cannot read platform secrets right now; nothing was accepted. Retry later.' },
  HERMES_PLATFORM_KEYS_UNAVAILABLE: { status: 503, message: 'The gateway cannot fetch the platform\'s token signing keys (OpenID metadata) right now; nothing was accepted. Retry later.' },
  HERMES_PLATFORM_UNAVAILABLE: { status: 503, message: 'The chat platform\'s API did not answer (the bot\'s identity could not be read); nothing was accepted. Retry later.' },
  HERMES_STORE_UNAVAILABLE: { status: 503, message: 'The ledger (Postgres) is unavailable; nothing was accepted. Retry later.' },
  HERMES_REPLY_TIMEOUT: { status: 504, message: 'The turn did not finish in time; the message is accepted and its reply will still be recorded.' },
  HERMES_TURN_FAILED: { status: 502, message: 'The agent could not answer.' },
  HERMES_TURN_INTERRUPTED: { status: 502, message: 'The turn was interrupted when the process running it stopped, and it was not run again because it may already have had effects.' },
  HERMES_ROUTE_NOT_FOUND: { status: 404, message: 'No such route.' },
  HERMES_METHOD_NOT_ALLOWED: { status: 405, message: 'This route does not take this method.' },
  HERMES_REQUEST_TIMEOUT: { status: 408, message: 'The request did not arrive in time.' },
  HERMES_HEADERS_TOO_LARGE: { status: 431, message: 'The request headers are too large (at most 16 KiB together).' },
  HERMES_BAD_HTTP: { status: 400, message: 'The request is not valid HTTP/1.1.' },
  HERMES_GATEWAY_CLOSING: { status: 503, message: 'The gateway is shutting down; the message stays accepted and its reply will still be recorded. Follow it again on another replica.' },
  HERMES_ADMIN_UNAUTHENTICATED: { status: 401, message: 'The admin API needs "Authorization: Bearer <token>" with the token set in HERMES_ADMIN_TOKEN.' },
  HERMES_LEARNING_WRITE_NOT_FOUND: { status: 404, message: 'No such staged write for this agent.' },
  HERMES_LEARNING_WRITE_DECIDED: { status: 409, message: 'This staged write was already decided.' },
  HERMES_PAIRING_NOT_FOUND: { status: 404, message: 'No pending pairing request of this agent has this code (codes expire after 1 hour; each wrong code counts toward the lock).' },
  HERMES_PAIRING_LOCKED: { status: 429, message: 'Pairing for this agent is locked for an hour after 5 wrong codes.' },
  HERMES_KANBAN_NOT_FOUND: { status: 404, message: 'No such Kanban board, task or agent.' },
  HERMES_KANBAN_FORBIDDEN: { status: 403, message: 'This Kanban change is not allowed.' },
  HERMES_KANBAN_CONFLICT: { status: 409, message: 'The Kanban task is not in a state that allows this.' },
  HERMES_USER_NOT_ALLOWED: { status: 403, message: 'This API key may not act as that user.' },
  HERMES_METRICS_UNAUTHENTICATED: { status: 401, message: '/metrics needs "Authorization: Bearer <token>" with the token set in HERMES_METRICS_TOKEN.' },
  HERMES_CLIENT_CLOSED_REQUEST: { status: 499, message: 'The client closed the connection before the request was answered.' },
  HERMES_INTERNAL: { status: 500, message: 'Internal error.' },
} as const;

export type ErrorCode = keyof typeof errorCatalogue;

export class HermesError extends Error {
  override name = 'HermesError';
  readonly status: number;
  constructor(readonly code: ErrorCode, detail?: string, readonly extra: Record<string, unknown> = {}) {
    super(detail ? `${errorCatalogue[code].message} ${detail}` : errorCatalogue[code].message);
    this.status = errorCatalogue[code].status;
  }
}

/**
 * SQLSTATEs meaning the server cannot serve us now: class 08 (connection exception), 57P01–57P03
 * (admin shutdown, crash shutdown, cannot connect now), 53300 (too many connections).
 */
const unavailableStates = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;
/** Socket errors of the driver's own connection (system errors carry `syscall`). */
const socketCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** What pg and pg-pool throw when they have no usable connection. */
const driverMessages = /timeout exceeded when trying to connect|Connection terminated|is not queryable|Cannot use a pool after calling end|Client was closed|Query read timeout/i;

/**
 * Postgres unreachable or shutting down: a pg/pg-pool error, never a client's. An error with an
 * HTTP `statusCode` below 500 is the caller's doing (fastify's "aborted" upload is ECONNRESET with
 * statusCode 400), whatever its code.
 */
export function isStoreUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; message?: unknown; statusCode?: unknown; syscall?: unknown };
  if (typeof e.statusCode === 'number' && e.statusCode < 500) return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (err instanceof pg.DatabaseError) return unavailableStates.test(code);
  if (typeof e.syscall === 'string' && socketCodes.has(code)) return true;
  return typeof e.message === 'string' && driverMessages.test(e.message);
}

/** SQLSTATEs of a connection Postgres refused: authentication (class 28), no such database (3D000). */
const refusedStates = /^(28[0-9A-Z]{3}|3D000)$/;

/**
 * The one line a command says when it cannot use Postgres at `databaseUrl` (unreachable, shutting
 * down, refusing the login or the database), naming the server by host and port only — never the
 * URL, which may hold a password; undefined for any other error (a socket error of another
 * address: Redis, the Kubernetes API).
 */
export function describePostgresFailure(err: unknown, databaseUrl: string | undefined): string | undefined {
  if (!databaseUrl || !err || typeof err !== 'object') return undefined;
  let server: URL;
  try {
    server = new URL(databaseUrl);
  } catch {
    return undefined;
  }
  const e = err as { code?: unknown; port?: unknown; message?: unknown };
  const refused = err instanceof pg.DatabaseError && refusedStates.test(e.code as string);
  if (!refused && !isStoreUnavailable(err)) return undefined;
  const port = server.port || '5432';
  if (typeof e.port === 'number' && String(e.port) !== port) return undefined;
  return `Postgres at ${server.hostname || 'localhost'}:${port} (DATABASE_URL) cannot be used: ${String(e.message)}`;
}
