// Reading an agent's past conversations for `session_search`, in Postgres: full-text search
// ('simple' configuration, GIN index on to_tsvector) ranked by ts_rank, or — for text without
// word boundaries (Chinese, Japanese) and for tool-call arguments — substring matching backed by
// the pg_trgm index; a window around a hit; a whole (bounded) conversation; recent
// conversations. Every statement is fenced to one agent and, unless the caller may see all of
// the agent's sessions (an admin asking for it), to one person's sessions: the fence is a bound
// parameter set by the worker from the admission, never by the model. A session outside the
// fence answers exactly like a session that does not exist.
import type { Db } from '../../core/index.js';

/** Whose conversations a call may read: the worker binds it from the admission. */
export interface RecallFence {
  agentId: string;
  /** The person of this conversation (users.id); null = none (then only `allUsers` reaches anything). */
  userId: string | null;
  /** Every session of the agent (admins who asked for it). */
  allUsers: boolean;
  /** The conversation the call comes from (its content is already in context). */
  currentSessionId: string;
}

export interface RecallHit {
  session_id: string;
  message_id: string;
  role: string;
  when: string;
  session_started: string;
  snippet: string;
}

export interface RecallMessage {
  message_id: string;
  role: string;
  when: string;
  content: string;
  tool_calls?: unknown;
}

export interface RecallSession {
  session_id: string;
  started: string;
  last_activity: string;
  messages: number;
  preview: string;
}

/** Characters of one message's content a window or a read shows (the rest is marked cut). */
const MESSAGE_CHARS = 2_000;
/** Characters around a substring match in its snippet. */
const SNIPPET_CONTEXT = 80;

const FENCE = `s.agent_id = $1 AND ($3::boolean OR s.user_id = $2::uuid)`;
const fenceParams = (f: RecallFence): unknown[] => [f.agentId, f.userId, f.allUsers];

/** LIKE pattern for `text` as a literal substring (%, _ and \ escaped). */
const likeLiteral = (text: string): string => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

const cut = (text: string): string => (text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS)}… [${(text.length - MESSAGE_CHARS).toLocaleString('en-US')} more characters]` : text);

/**
 * The best hit per session for `query`, ranked: full-text matches by ts_rank first, then
 * substring matches (CJK text, tool-call arguments), newest first; the current session left out.
 */
export async function searchSessions(db: Pick<Db, 'pool'>, fence: RecallFence, query: string, limit: number): Promise<RecallHit[]> {
  // Three indexed ways in — full text (GIN on to_tsvector), substring of the content and of the
  // tool-call arguments (pg_trgm) — each fenced by the join, then ranked.
  const { rows } = await db.pool.query<RecallHit>(`
    WITH q AS (SELECT websearch_to_tsquery('simple', $4) AS tsq),
    candidates AS (
      SELECT m.id FROM messages m, q WHERE to_tsvector('simple', m.content) @@ q.tsq
      UNION SELECT m.id FROM messages m WHERE m.content ILIKE $6
      UNION SELECT m.id FROM messages m WHERE m.tool_calls IS NOT NULL AND m.tool_calls::text ILIKE $6
    ),
    hits AS (
      SELECT m.id, m.session_id, m.role, m.created_at, m.content, s.created_at AS session_started,
        to_tsvector('simple', m.content) @@ q.tsq AS fts,
        ts_rank(to_tsvector('simple', m.content), q.tsq) AS rank
      FROM candidates c JOIN messages m ON m.id = c.id JOIN sessions s ON s.id = m.session_id, q
      WHERE ${FENCE} AND m.session_id <> $5::uuid AND m.role <> 'system'
    ),
    best AS (
      SELECT DISTINCT ON (session_id) * FROM hits ORDER BY session_id, fts DESC, rank DESC, created_at DESC
    )
    SELECT session_id::text, id::text AS message_id, role::text,
      to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS "when",
      to_char(session_started AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS session_started,
      CASE WHEN fts THEN ts_headline('simple', content, (SELECT tsq FROM q), 'MaxFragments=2, MaxWords=24, MinWords=8, StartSel=«, StopSel=»')
        WHEN strpos(lower(content), lower($4)) > 0 THEN
          substr(content, greatest(strpos(lower(content), lower($4)) - ${SNIPPET_CONTEXT}, 1), length($4) + ${2 * SNIPPET_CONTEXT})
        ELSE '(matched in the arguments of a tool call)' END AS snippet
    FROM best ORDER BY fts DESC, rank DESC, created_at DESC LIMIT $7`,
  [...fenceParams(fence), query, fence.currentSessionId, likeLiteral(query), limit]);
  return rows;
}

/** Whether `sessionId` is inside the fence (else the caller says "not found", as for a missing one). */
async function visible(db: Pick<Db, 'pool'>, fence: RecallFence, sessionId: string): Promise<boolean> {
  const { rows } = await db.pool.query(`SELECT 1 FROM sessions s WHERE s.id = $4::uuid AND ${FENCE}`, [...fenceParams(fence), sessionId]);
  return rows.length > 0;
}

const MESSAGE_COLUMNS = `id::text AS message_id, role::text, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS "when", content, tool_calls`;

function shape(rows: (RecallMessage & { tool_calls: unknown })[]): RecallMessage[] {
  return rows.map(({ tool_calls: calls, ...m }) => ({ ...m, content: cut(m.content), ...(calls ? { tool_calls: calls } : {}) }));
}

/** ±`window` messages around message `aroundId` of `sessionId`; undefined when the session is not visible. */
export async function messagesAround(db: Pick<Db, 'pool'>, fence: RecallFence, sessionId: string, aroundId: string, window: number): Promise<RecallMessage[] | undefined> {
  if (!(await visible(db, fence, sessionId))) return undefined;
  const { rows } = await db.pool.query<RecallMessage & { tool_calls: unknown }>(`
    WITH anchor AS (SELECT seq FROM messages WHERE session_id = $1::uuid AND id = $2::bigint)
    SELECT ${MESSAGE_COLUMNS} FROM messages, anchor
    WHERE session_id = $1::uuid AND messages.seq BETWEEN anchor.seq - $3 AND anchor.seq + $3 AND role <> 'system'
    ORDER BY messages.seq`, [sessionId, aroundId, window]);
  return shape(rows);
}

/** The first and last `each` messages of `sessionId` (all when it has fewer); undefined when not visible. */
export async function readSession(db: Pick<Db, 'pool'>, fence: RecallFence, sessionId: string, each: number): Promise<{ messages: RecallMessage[]; total: number } | undefined> {
  if (!(await visible(db, fence, sessionId))) return undefined;
  const { rows } = await db.pool.query<RecallMessage & { tool_calls: unknown; total: string }>(`
    WITH ranked AS (
      SELECT *, row_number() OVER (ORDER BY seq) AS n, count(*) OVER () AS total FROM messages WHERE session_id = $1::uuid AND role <> 'system'
    )
    SELECT ${MESSAGE_COLUMNS}, total FROM ranked WHERE n <= $2 OR n > total - $2 ORDER BY seq`, [sessionId, each]);
  const total = Number(rows[0]?.total ?? 0);
  return { messages: shape(rows.map(({ total: _total, ...m }) => m)), total };
}

/** The newest `limit` conversations in the fence (the current one left out), with their first user line. */
export async function recentSessions(db: Pick<Db, 'pool'>, fence: RecallFence, limit: number): Promise<RecallSession[]> {
  const { rows } = await db.pool.query<RecallSession>(`
    SELECT s.id::text AS session_id,
      to_char(s.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started,
      to_char(s.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_activity,
      (SELECT count(*)::int FROM messages m WHERE m.session_id = s.id AND m.role <> 'system') AS messages,
      coalesce((SELECT left(m.content, 160) FROM messages m WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.seq LIMIT 1), '') AS preview
    FROM sessions s WHERE ${FENCE} AND s.id <> $4::uuid
    ORDER BY s.updated_at DESC LIMIT $5`, [...fenceParams(fence), fence.currentSessionId, limit]);
  return rows;
}

/** The person `userId` as the Agent's spec.admins names people: `platform:platformUserId`. */
export async function userIdentity(db: Pick<Db, 'pool'>, userId: string | null): Promise<string | undefined> {
  if (!userId) return undefined;
  const { rows } = await db.pool.query<{ id: string }>(`SELECT platform || ':' || platform_user_id AS id FROM users WHERE id = $1::uuid`, [userId]);
  return rows[0]?.id;
}

