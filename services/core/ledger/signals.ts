// Control signals for running turns: `/stop`, `/steer <text>`, `/redirect <text>` arrive as
// ordinary messages (durable admissions); the gateway also records a signal row and announces it
// on the session's control channel, so the worker running the session's turn reacts at once.
// A turn honours only signals of admissions after its own (a `/stop` sent while idle stops nothing).
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Sql } from '../db.js';
import { sessionControlChannel } from '../queues.js';

export type SignalKind = 'stop' | 'steer' | 'redirect';

export interface ControlCommand {
  kind: SignalKind;
  text: string;
}

const COMMAND = /^\/(stop|steer|redirect)(?:\s+([\s\S]*))?$/i;

/** `/stop`, `/steer <text>`, `/redirect <text>` → the command; anything else → undefined. */
export function parseControlCommand(content: string): ControlCommand | undefined {
  const m = COMMAND.exec(content.trim());
  if (!m) return undefined;
  const kind = m[1]!.toLowerCase() as SignalKind;
  const text = (m[2] ?? '').trim();
  if (kind !== 'stop' && !text) return undefined; // "/steer" with nothing to say is just a message
  return { kind, text };
}

/**
 * The text of the stop signal a plain message records under busy policy `interrupt` (a `/stop` has
 * none): the running turn ends "stopped by a new message", and the message runs next.
 */
export const busyInterruptText = 'a new message';

export const sessionSignalSchema = z.object({
  id: z.string(),
  sessionId: z.string(),
  admissionSeq: z.number(),
  kind: z.enum(['stop', 'steer', 'redirect']),
  text: z.string(),
});
export type SessionSignal = z.infer<typeof sessionSignalSchema>;

export async function recordSignal(sql: Sql, s: { sessionId: string; admissionId: string; kind: SignalKind; text: string }): Promise<SessionSignal> {
  const { rows } = await sql.query<{ id: string; seq: string }>(
    `INSERT INTO session_signals (id, session_id, admission_id, admission_seq, kind, text)
     SELECT gen_random_uuid(), $1, a.id, a.seq, $3, $4 FROM admissions a WHERE a.id = $2
     RETURNING id, admission_seq AS seq`,
    [s.sessionId, s.admissionId, s.kind, s.text],
  );
  if (!rows[0]) throw new Error(`admission ${s.admissionId} does not exist`);
  return { id: rows[0].id, sessionId: s.sessionId, admissionSeq: Number(rows[0].seq), kind: s.kind, text: s.text };
}

export async function publishSignal(redis: Redis, prefix: string, s: SessionSignal): Promise<void> {
  await redis.publish(sessionControlChannel(prefix, s.sessionId), JSON.stringify(s));
}

export function parseSignal(raw: string): SessionSignal | undefined {
  try {
    const r = sessionSignalSchema.safeParse(JSON.parse(raw));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** Signals recorded for admissions after `afterSeq` that no turn has acted on (closes the subscribe race). */
export async function pendingSignals(sql: Sql, sessionId: string, afterSeq: number): Promise<SessionSignal[]> {
  const { rows } = await sql.query<{ id: string; seq: string; kind: SignalKind; text: string }>(
    `SELECT id, admission_seq AS seq, kind, text FROM session_signals
     WHERE session_id = $1 AND admission_seq > $2 AND consumed_at IS NULL ORDER BY admission_seq`,
    [sessionId, afterSeq],
  );
  return rows.map((r) => ({ id: r.id, sessionId, admissionSeq: Number(r.seq), kind: r.kind, text: r.text }));
}

/** Marks a signal as acted on by `admissionId`'s turn; false when another turn already took it. */
export async function consumeSignal(sql: Sql, signalId: string, admissionId: string): Promise<boolean> {
  const { rowCount } = await sql.query(`UPDATE session_signals SET consumed_at = now(), consumed_by = $2 WHERE id = $1 AND consumed_at IS NULL`, [signalId, admissionId]);
  return (rowCount ?? 0) > 0;
}

/** Gives back signals `admissionId`'s turn took but never delivered to the model (unsent steers). */
export async function releaseSignals(sql: Sql, signalIds: readonly string[], admissionId: string): Promise<void> {
  await sql.query(`UPDATE session_signals SET consumed_at = NULL, consumed_by = NULL WHERE id = ANY($1::uuid[]) AND consumed_by = $2`, [signalIds, admissionId]);
}

/** The signal a control admission created, with whether a turn acted on it. */
export async function signalOfAdmission(sql: Sql, admissionId: string): Promise<{ kind: SignalKind; consumed: boolean } | undefined> {
  const { rows } = await sql.query<{ kind: SignalKind; consumed: boolean }>(
    `SELECT kind, consumed_at IS NOT NULL AS consumed FROM session_signals WHERE admission_id = $1 ORDER BY created_at LIMIT 1`, [admissionId],
  );
  return rows[0];
}

/** Settles a control admission's own signal (nothing was running to act on it). */
export async function expireSignalOf(sql: Sql, admissionId: string): Promise<void> {
  await sql.query(`UPDATE session_signals SET consumed_at = now() WHERE admission_id = $1 AND consumed_at IS NULL`, [admissionId]);
}
