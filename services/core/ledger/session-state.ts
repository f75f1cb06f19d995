// What the gateway's out-of-band commands read and change in a session: what runs and waits in
// it (`/status`, the busy policy), and the session boundary (`/new`, `/reset`).
import type { Sql } from '../db.js';

export interface SessionActivity {
  /** The turn running now (state `started`), if any. */
  running: { id: string; seq: number; startedAt: Date | null } | undefined;
  /** Admissions waiting for their turn (not counting `except`). */
  queued: number;
  /** Turns whose outcome is unknown after a crash: they wait for /retry or /discard. */
  unknown: number;
}

/** Running, queued and unknown admissions of the session (`except`: the admission asking, left out). */
export async function sessionActivity(sql: Sql, sessionId: string, except?: string): Promise<SessionActivity> {
  const { rows } = await sql.query<{ id: string | null; seq: string | null; started_at: Date | null; queued: number; unknown: number }>(
    `SELECT (array_agg(id ORDER BY seq) FILTER (WHERE state = 'started'))[1] AS id,
            (array_agg(seq ORDER BY seq) FILTER (WHERE state = 'started'))[1] AS seq,
            (array_agg(started_at ORDER BY seq) FILTER (WHERE state = 'started'))[1] AS started_at,
            count(*) FILTER (WHERE state = 'queued')::int AS queued, count(*) FILTER (WHERE state = 'unknown')::int AS unknown
     FROM admissions WHERE session_id = $1 AND state IN ('started', 'queued', 'unknown') AND id IS DISTINCT FROM $2`,
    [sessionId, except ?? null],
  );
  const r = rows[0];
  return {
    running: r?.id ? { id: r.id, seq: Number(r.seq), startedAt: r.started_at } : undefined,
    queued: r?.queued ?? 0,
    unknown: r?.unknown ?? 0,
  };
}

/** What `/new` did: the fresh session, and how many messages queued in the old one it dropped. */
export interface NewSession {
  id: string;
  dropped: number;
}

/**
 * `/new` (admission `admissionId`): binds the session key of `sessionId` to a fresh session (same
 * agent and user). As Hermes' reset does, the old session is ended (`ended`: a worker drain never
 * marks it for resuming, a cut turn of it is not resumed) and the messages still queued in it are
 * dropped (`terminal/discarded`), so none of them runs in the conversation the user left. Its
 * transcript stays as it is.
 */
export async function startNewSession(sql: Sql, sessionId: string, admissionId: string): Promise<NewSession> {
  const { rows } = await sql.query<{ id: string }>(
    `WITH old AS (SELECT agent_id, user_id, session_key FROM sessions WHERE id = $1),
          fresh AS (INSERT INTO sessions (id, agent_id, user_id, session_key, updated_at)
                    SELECT gen_random_uuid(), agent_id, user_id, session_key, now() FROM old RETURNING id, agent_id, session_key)
     UPDATE session_keys k SET session_id = fresh.id, updated_at = now() FROM fresh
     WHERE k.agent_id = fresh.agent_id AND k.key = fresh.session_key AND k.session_id = $1
     RETURNING fresh.id`,
    [sessionId],
  );
  if (!rows[0]) throw new Error(`session ${sessionId} is not bound to its key any more`);
  await sql.query(`UPDATE sessions SET state = 'ended', updated_at = now() WHERE id = $1`, [sessionId]);
  const { rowCount } = await sql.query(
    `UPDATE admissions SET state = 'terminal', outcome = 'discarded', finished_at = now(), updated_at = now(), error = $3
     WHERE session_id = $1 AND state = 'queued' AND id <> $2`,
    [sessionId, admissionId, `dropped by /new (admission ${admissionId})`],
  );
  return { id: rows[0].id, dropped: rowCount ?? 0 };
}
