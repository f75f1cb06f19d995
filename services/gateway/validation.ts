// zod validation of request parts, failing with HERMES_BAD_REQUEST that names each bad field
// (`body.content: Too small…`) so a caller can fix the request.
import { z } from 'zod';
import { HermesError } from '../core/index.js';
import { describeIssues } from './errors.js';

export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'headers' | 'params'): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const { detail, issues } = describeIssues(result.error, where);
  throw new HermesError('HERMES_BAD_REQUEST', detail, { issues });
}

/** A caller-chosen identifier (user id, conversation, idempotency key). */
export const identifier = z.string().min(1).max(256)
  .refine((s) => ![...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), 'must not contain control characters');

export const agentParams = z.object({ namespace: z.string().min(1).max(253), name: z.string().min(1).max(253) });

/** One value of an optional header (a repeated header is refused rather than guessed). */
export function headerValue(value: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(value)) throw new HermesError('HERMES_BAD_REQUEST', `Send the ${name} header once.`);
  if (value === undefined || value === '') return undefined;
  return parseInput(identifier, value, 'headers');
}

/** The dedupe id: body `eventId` or the `Idempotency-Key` header (they must agree when both are sent). */
export function pickEventId(bodyEventId: string | undefined, header: string | string[] | undefined): string | undefined {
  const fromHeader = headerValue(header, 'Idempotency-Key');
  if (bodyEventId !== undefined && fromHeader !== undefined && bodyEventId !== fromHeader) {
    throw new HermesError('HERMES_BAD_REQUEST', `body.eventId ("${bodyEventId}") and the Idempotency-Key header ("${fromHeader}") differ; send one of them.`);
  }
  return bodyEventId ?? fromHeader;
}
