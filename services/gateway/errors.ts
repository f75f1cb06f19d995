// Every error the gateway answers, in one of two shapes: Hermes' `{ error: { code, message } }`
// (codes from core's catalogue), or OpenAI's `{ error: { message, type,
// code, param } }` on the OpenAI-compatible routes, so OpenAI SDKs surface it as an APIError.
import { ZodError } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HermesError, isStoreUnavailable, type ErrorCode } from '../core/index.js';

/** An error as answered: status, stable code, actionable message, extra fields. */
export interface ApiError {
  status: number;
  code: ErrorCode;
  message: string;
  extra: Record<string, unknown>;
}

const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'HERMES_BAD_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'HERMES_BAD_JSON',
  FST_ERR_CTP_BODY_TOO_LARGE: 'HERMES_PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'HERMES_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'HERMES_BAD_REQUEST',
};

const fromCatalogue = (code: ErrorCode, detail?: string, extra: Record<string, unknown> = {}): ApiError => {
  const e = new HermesError(code, detail, extra);
  return { status: e.status, code, message: e.message, extra };
};

/** `body.messages.0.content: Invalid input` lines, one per zod issue. */
export function describeIssues(err: ZodError, where: string): { detail: string; issues: { path: string; message: string }[] } {
  const issues = err.issues.map((i) => ({ path: [where, ...i.path.map(String)].join('.'), message: i.message }));
  return { detail: issues.map((i) => `${i.path}: ${i.message}.`).join(' '), issues };
}

/** A body of the route asked, for the malformed-JSON answer (the message API's example misled OpenAI-route callers). */
function jsonExample(url: string): string {
  if (url.startsWith('/v1/chat/completions')) return '{"model": "<namespace>/<agent>", "messages": [{"role": "user", "content": "hello"}]}';
  if (/^\/v1\/(responses|runs)(\/|\?|$)/.test(url)) return '{"model": "<namespace>/<agent>", "input": "hello"}';
  return '{"content": "hello"}';
}

function fromFastify(err: { code?: string; statusCode?: number; message: string }, request: FastifyRequest, maxBodyBytes: number): ApiError | undefined {
  const code = err.code ? fastifyCodes[err.code] : undefined;
  if (code === 'HERMES_PAYLOAD_TOO_LARGE') return fromCatalogue(code, `The limit is ${maxBodyBytes} bytes (HERMES_MAX_BODY_BYTES).`);
  if (code === 'HERMES_UNSUPPORTED_MEDIA_TYPE') return fromCatalogue(code, `Got "${request.headers['content-type'] ?? 'none'}".`);
  if (code === 'HERMES_BAD_JSON') return fromCatalogue(code, `Send a JSON object, e.g. ${jsonExample(request.url)}.`);
  if (code) return fromCatalogue(code, err.message);
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return { ...fromCatalogue('HERMES_BAD_REQUEST', err.message), status: err.statusCode };
  return undefined;
}

/** The client hung up (mid-upload or while we waited): nobody reads the answer; not our failure. */
export const clientWentAway = (request: FastifyRequest) =>
  request.clientGone?.aborted === true || (request.raw.socket as { destroyed?: boolean } | undefined)?.destroyed === true;

/** Maps anything thrown while serving `request` to the answer we give. */
export function toApiError(err: unknown, request: FastifyRequest, maxBodyBytes: number): ApiError {
  if (clientWentAway(request) && !(err instanceof HermesError && err.code === 'HERMES_GATEWAY_CLOSING')) return fromCatalogue('HERMES_CLIENT_CLOSED_REQUEST');
  if (err instanceof HermesError) return { status: err.status, code: err.code, message: err.message, extra: err.extra };
  if (err instanceof ZodError) {
    const { detail, issues } = describeIssues(err, 'body');
    return fromCatalogue('HERMES_BAD_REQUEST', detail, { issues });
  }
  if (isStoreUnavailable(err)) return fromCatalogue('HERMES_STORE_UNAVAILABLE');
  if (err instanceof Error) return fromFastify(err, request, maxBodyBytes) ?? fromCatalogue('HERMES_INTERNAL');
  return fromCatalogue('HERMES_INTERNAL');
}

/** OpenAI's error `type` and `code` for our codes, so OpenAI clients classify them as usual. */
const openAiCodes: Partial<Record<ApiError['code'], string>> = {
  HERMES_UNAUTHENTICATED: 'invalid_api_key',
  HERMES_FORBIDDEN: 'invalid_api_key',
  HERMES_AGENT_NOT_FOUND: 'model_not_found',
  HERMES_TOO_MANY_WAITS: 'rate_limit_exceeded',
  HERMES_CONVERSATION_FULL: 'rate_limit_exceeded',
  HERMES_IDEMPOTENCY_CONFLICT: 'idempotency_key_conflict',
  HERMES_RESPONSE_NOT_FOUND: 'response_not_found',
  HERMES_RUN_NOT_FOUND: 'run_not_found',
  HERMES_SESSION_NOT_FOUND: 'session_not_found',
};

function openAiType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

/**
 * OpenAI's shape. A key that may not use the agent answers 401 (as OpenAI does for a bad key),
 * not 403: OpenAI clients treat 401 as "fix your key".
 */
export function openAiErrorBody(e: ApiError): { status: number; body: { error: { message: string; type: string; code: string; param: null } } } {
  const status = e.code === 'HERMES_FORBIDDEN' ? 401 : e.status;
  return { status, body: { error: { message: e.message, type: openAiType(status), code: openAiCodes[e.code] ?? e.code, param: null } } };
}

export const hermesErrorBody = (e: ApiError) => ({ error: { code: e.code, message: e.message, ...e.extra } });

/** The OpenAI-compatible routes (and Hermes' API-server routes beside them) answer errors in OpenAI's shape. */
export const isOpenAiRoute = (url: string) => /^\/v1\/(chat\/completions|models|responses|runs|sessions)(\/|\?|$)/.test(url);

export function sendApiError(reply: FastifyReply, request: FastifyRequest, e: ApiError): FastifyReply {
  if (isOpenAiRoute(request.url)) {
    const { status, body } = openAiErrorBody(e);
    return reply.code(status).type('application/json').send(body);
  }
  return reply.code(e.status).type('application/json').send(hermesErrorBody(e));
}
