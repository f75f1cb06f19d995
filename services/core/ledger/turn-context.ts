// What a turn reads before it runs, in one statement: the session's stored prompt (and when the
// conversation started), its transcript, and control signals recorded for later admissions that
// no turn has acted on (the turn subscribes first, then reads these, so none falls in between).
import type { Sql } from '../db.js';
import type { SessionSignal } from './signals.js';
import type { TranscriptMessage } from './transcript.js';

export interface TurnContext {
  /** `ownerUserId`: the person the session was opened for (sessions.user_id), whose USER block a stored prompt holds. */
  prompt: { text: string | null; identity: string | null; sessionStartedAt: Date; ownerUserId: string | null };
  transcript: TranscriptMessage[];
  signals: SessionSignal[];
  /**
   * Admissions a later `/retry` ran again in their place (not `unknown` ones, which a retry
   * discards): their messages are the attempt the retry replaced (Hermes truncates them).
   */
  retried: string[];
}

interface Row {
  system_prompt: string | null;
  prompt_identity: string | null;
  created_at: Date;
  user_id: string | null;
  transcript: { seq: number; role: TranscriptMessage['role']; content: string; tool_calls: TranscriptMessage['toolCalls']; tool_call_id: string | null; effect_disposition: TranscriptMessage['effectDisposition']; interrupted: boolean; admission_id: string | null }[];
  signals: { id: string; seq: string | number; kind: SessionSignal['kind']; text: string }[];
  retried: string[];
}

/** The turn context of `sessionId` for a turn of admission sequence `afterSeq`; undefined when the session is gone. */
export async function readTurnContext(sql: Sql, sessionId: string, afterSeq: number, transcriptLimit = 1_000): Promise<TurnContext | undefined> {
  const { rows } = await sql.query<Row>({
    name: 'hermes_turn_context', // prepared once per connection: no parse and plan per turn
    text: `SELECT s.system_prompt, s.prompt_identity, s.created_at, s.user_id,
       (SELECT COALESCE(json_agg(m ORDER BY m.seq), '[]'::json) FROM (
          SELECT seq, role, content, tool_calls, tool_call_id, effect_disposition, interrupted, admission_id
          FROM messages WHERE session_id = $1 ORDER BY seq DESC LIMIT $3) m) AS transcript,
       (SELECT COALESCE(json_agg(g ORDER BY g.seq), '[]'::json) FROM (
          SELECT id, admission_seq AS seq, kind, text FROM session_signals
          WHERE session_id = $1 AND admission_seq > $2 AND consumed_at IS NULL) g) AS signals,
       (SELECT COALESCE(json_agg(r.resume_of), '[]'::json) FROM admissions r JOIN admissions o ON o.id = r.resume_of
          WHERE r.session_id = $1 AND r.resume_of IS NOT NULL AND r.intent = 'queue' AND o.outcome IS DISTINCT FROM 'discarded') AS retried
     FROM sessions s WHERE s.id = $1`,
    values: [sessionId, afterSeq, transcriptLimit],
  });
  const r = rows[0];
  if (!r) return undefined;
  return {
    prompt: { text: r.system_prompt, identity: r.prompt_identity, sessionStartedAt: r.created_at, ownerUserId: r.user_id },
    transcript: r.transcript.map((m) => ({
      seq: m.seq, role: m.role, content: m.content, toolCalls: m.tool_calls, toolCallId: m.tool_call_id,
      effectDisposition: m.effect_disposition, interrupted: m.interrupted, admissionId: m.admission_id,
    })),
    signals: r.signals.map((g) => ({ id: g.id, sessionId, admissionSeq: Number(g.seq), kind: g.kind, text: g.text })),
    retried: r.retried,
  };
}
