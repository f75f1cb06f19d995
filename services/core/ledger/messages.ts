// The transcript: append-only, one sequence per session (the session row is the counter, so
// appends to one session serialise on its row lock and sequence numbers never repeat).
import type { Sql } from '../db.js';
import { pgJson, pgText } from './pg-text.js';

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface NewMessage {
  role: Role;
  content: string;
  admissionId?: string | null;
  interrupted?: boolean;
  usage?: unknown;
  toolCalls?: unknown;
  toolCallId?: string | null;
  effectDisposition?: 'applied' | 'none' | 'unknown' | null;
}

export interface StoredMessage {
  id: number;
  seq: number;
  role: Role;
  content: string;
  admissionId: string | null;
  interrupted: boolean;
  createdAt: Date;
}

/** Appends `m` (NUL and lone surrogates in its text become U+FFFD, see pg-text.ts). */
export async function appendMessage(sql: Sql, sessionId: string, m: NewMessage): Promise<{ id: number; seq: number }> {
  const { rows } = await sql.query<{ id: number; seq: number }>(
    `SELECT o_id AS id, o_seq AS seq FROM hermes_append_message($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [sessionId, m.role, pgText(m.content), m.admissionId ?? null, m.interrupted ?? false, pgJson(m.usage), pgJson(m.toolCalls), m.toolCallId === undefined || m.toolCallId === null ? null : pgText(m.toolCallId), m.effectDisposition ?? null],
  );
  return rows[0]!;
}

export async function listMessages(sql: Sql, sessionId: string, limit = 1_000): Promise<StoredMessage[]> {
  const { rows } = await sql.query<StoredMessage>(
    `SELECT id, seq, role, content, admission_id AS "admissionId", interrupted, created_at AS "createdAt"
     FROM (SELECT * FROM messages WHERE session_id = $1 ORDER BY seq DESC LIMIT $2) m ORDER BY seq`,
    [sessionId, limit],
  );
  return rows;
}

export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Token usage recorded on a turn's final assistant message (zeros when none was reported). */
export async function getTurnUsage(sql: Sql, admissionId: string): Promise<TurnUsage> {
  const { rows } = await sql.query<{ usage: { inputTokens?: number; outputTokens?: number } | null }>(
    `SELECT usage FROM messages WHERE admission_id = $1 AND role = 'assistant' ORDER BY seq DESC LIMIT 1`,
    [admissionId],
  );
  const u = rows[0]?.usage;
  return { inputTokens: u?.inputTokens ?? 0, outputTokens: u?.outputTokens ?? 0 };
}
