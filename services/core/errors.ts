// The error catalogue: stable codes, a message a user can act on, and the HTTP status.
export const errorCatalogue = {
  HERMES_BAD_JSON: { status: 400, message: 'The request body is not valid JSON.' },
  HERMES_BAD_REQUEST: { status: 400, message: 'The request is invalid.' },
  HERMES_UNAUTHENTICATED: { status: 401, message: 'Missing or malformed API key: send "Authorization: Bearer <key>".' },
  HERMES_FORBIDDEN: { status: 403, message: 'This API key may not use this agent.' },
  HERMES_AGENT_NOT_FOUND: { status: 404, message: 'No such agent.' },
  HERMES_ADMISSION_NOT_FOUND: { status: 404, message: 'No such admission.' },
  HERMES_PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  HERMES_UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Send Content-Type: application/json.' },
  HERMES_STORE_UNAVAILABLE: { status: 503, message: 'The ledger (Postgres) is unavailable; nothing was accepted. Retry later.' },
  HERMES_REPLY_TIMEOUT: { status: 504, message: 'The turn did not finish in time; the message is accepted and its reply will still be recorded.' },
  HERMES_TURN_FAILED: { status: 502, message: 'The agent could not answer.' },
  HERMES_TURN_INTERRUPTED: { status: 502, message: 'The turn was interrupted when the process running it stopped, and it was not run again because it may already have had effects.' },
  HERMES_ROUTE_NOT_FOUND: { status: 404, message: 'No such route.' },
  HERMES_GATEWAY_CLOSING: { status: 503, message: 'The gateway is shutting down; the message stays accepted and its reply will still be recorded. Follow it again on another replica.' },
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

/** Postgres unreachable or shutting down (connection refused, terminated, cannot connect now). */
export function isStoreUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (e.code && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '53300'].includes(e.code)) return true;
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|Query read timeout/i.test(e.message ?? '');
}
