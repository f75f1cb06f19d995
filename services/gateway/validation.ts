// zod validation of request parts, failing with HERMES_BAD_REQUEST that names each bad field
// (`body.content: Too small…`) so a caller can fix the request. Every text field is checked for
// what Postgres cannot store (NUL, lone UTF-16 surrogates) before anything reads it, so such a
// request is a 400 naming the field, never a 500 — also before the key is checked.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { HermesError } from '../core/index.js';
import { describeIssues } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route takes no body, or an optional one: an empty body sent with `content-type:
     * application/json` (as OpenAI's SDK sends a bodiless POST or DELETE) is no body, not a 400.
     */
    optionalBody?: boolean;
  }
}

/** The route config of a route whose body is optional ({@link acceptEmptyJsonBody}). */
export const optionalBody = { config: { optionalBody: true } } as const;

/**
 * JSON bodies as fastify parses them (prototype poisoning refused), except that an empty body is
 * no body on the routes marked {@link optionalBody}; elsewhere it stays a 400 HERMES_BAD_JSON.
 */
export function acceptEmptyJsonBody(app: FastifyInstance): void {
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body: string, done) => {
    if (body === '' && request.routeOptions.config.optionalBody === true) return done(null, undefined);
    void json(request, body, done);
  });
}

export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'headers' | 'params' | 'query'): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const { detail, issues } = describeIssues(result.error, where);
  throw new HermesError('HERMES_BAD_REQUEST', detail, { issues });
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const control = /[\u0000-\u001f\u007f]/;

/** Text a person wrote (message content, history): any characters but NUL, as well-formed Unicode. */
export const freeText = z.string()
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL (U+0000) characters')
  .refine((s) => !loneSurrogate.test(s), 'must be well-formed Unicode (it holds a lone UTF-16 surrogate)');

/** A one-line value (names, ids, model, path parts): no control characters at all, well-formed. */
export const singleLine = z.string()
  .refine((s) => !control.test(s), 'must not contain control characters (U+0000–U+001F, U+007F)')
  .refine((s) => !loneSurrogate.test(s), 'must be well-formed Unicode (it holds a lone UTF-16 surrogate)');

/** A caller-chosen identifier (user id, conversation, idempotency key). */
export const identifier = singleLine.min(1).max(256);

export const agentParams = z.object({ namespace: singleLine.min(1).max(253), name: singleLine.min(1).max(253) });

/** Headers that name one thing; Node joins a repeated one into "a, b", so they are counted in the raw headers. */
const singleHeaders = new Set(['idempotency-key', 'x-hermes-session-id']);

/** Refuses a request that repeats one of `singleHeaders` (400), before any route reads it. */
export function refuseRepeatedHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const raw = request.raw.rawHeaders;
    const seen = new Set<string>();
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      if (!singleHeaders.has(name)) continue;
      if (seen.has(name)) throw new HermesError('HERMES_BAD_REQUEST', `Send the ${raw[i]} header once.`);
      seen.add(name);
    }
  });
}

/**
 * Refuses a compressed body (415): fastify does not decode Content-Encoding, so a gzip body was
 * read as text and answered "not valid JSON", which sent the caller looking at its JSON.
 */
export function refuseEncodedBodies(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const encoding = request.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') throw new HermesError('HERMES_UNSUPPORTED_MEDIA_TYPE', `Content-Encoding "${encoding}" is not supported: send the body uncompressed.`);
  });
}

/** One value of an optional header (a repeated header is refused rather than guessed). */
export function headerValue(value: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(value)) throw new HermesError('HERMES_BAD_REQUEST', `Send the ${name} header once.`);
  if (value === undefined || value === '') return undefined;
  return parseInput(z.object({ [name]: identifier }), { [name]: value }, 'headers')[name];
}

/** The dedupe id: body `eventId` or the `Idempotency-Key` header (they must agree when both are sent). */
export function pickEventId(bodyEventId: string | undefined, header: string | string[] | undefined): string | undefined {
  const fromHeader = headerValue(header, 'Idempotency-Key');
  if (bodyEventId !== undefined && fromHeader !== undefined && bodyEventId !== fromHeader) {
    throw new HermesError('HERMES_BAD_REQUEST', `body.eventId ("${bodyEventId}") and the Idempotency-Key header ("${fromHeader}") differ; send one of them.`);
  }
  return bodyEventId ?? fromHeader;
}
