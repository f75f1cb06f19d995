// Turns started through the API's own resources: `POST /v1/responses` (`resp_…`) and
// `POST /v1/runs` (`run_…`). One row per public id, written in the admission's transaction, so
// an id is readable (and `previous_response_id` continuable) on every gateway replica, and an
// Idempotency-Key maps to exactly one admission. Also: a caller's sessions for `GET /v1/sessions`.
import type { Sql } from '../db.js';
import { pgJson } from './pg-text.js';

export type ApiTurnKind = 'response' | 'run';

export interface ApiTurnInput {
  id: string;
  kind: ApiTurnKind;
  agentId: string;
  admissionId: string;
  keyId: string;
  apiUser?: string;
  conversation: string;
  previousId?: string;
  idempotencyKey?: string;
  requestHash: string;
  model: string;
  instructions?: string;
  store: boolean;
  metadata?: Record<string, string>;
}

export interface ApiTurn {
  id: string;
  kind: ApiTurnKind;
  agentId: string;
  admissionId: string;
  keyId: string;
  apiUser: string | null;
  conversation: string;
  previousId: string | null;
  idempotencyKey: string | null;
  requestHash: string;
  model: string;
  instructions: string | null;
  store: boolean;
  metadata: Record<string, string> | null;
  createdAt: Date;
  deletedAt: Date | null;
  /** From the ledger: the admission's platform and the identity that admitted it (`users.platform_user_id`). */
  platform: string;
  callerId: string | null;
  sessionId: string;
}

const columns = `t.id, t.kind, t.agent_id AS "agentId", t.admission_id AS "admissionId", t.key_id AS "keyId", t.api_user AS "apiUser",
  t.conversation, t.previous_id AS "previousId", t.idempotency_key AS "idempotencyKey", t.request_hash AS "requestHash", t.model,
  t.instructions, t.store, t.metadata, t.created_at AS "createdAt", t.deleted_at AS "deletedAt",
  a.platform, u.platform_user_id AS "callerId", a.session_id AS "sessionId"`;
const from = `api_turns t JOIN admissions a ON a.id = t.admission_id LEFT JOIN users u ON u.id = a.user_id`;

/**
 * Inserts the row unless the key already used this Idempotency-Key for this kind; either way
 * returns the row that holds the key (ours, or the earlier one), and whether ours was written.
 */
export async function insertApiTurn(sql: Sql, t: ApiTurnInput): Promise<{ turn: ApiTurn; inserted: boolean }> {
  const { rowCount } = await sql.query(
    `INSERT INTO api_turns (id, kind, agent_id, admission_id, key_id, api_user, conversation, previous_id, idempotency_key, request_hash, model, instructions, store, metadata)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (key_id, kind, idempotency_key) DO NOTHING`,
    [t.id, t.kind, t.agentId, t.admissionId, t.keyId, t.apiUser ?? null, t.conversation, t.previousId ?? null, t.idempotencyKey ?? null,
      t.requestHash, t.model, t.instructions ?? null, t.store, pgJson(t.metadata)],
  );
  const turn = rowCount === 1 ? await getApiTurn(sql, t.id) : await apiTurnByIdempotencyKey(sql, t.keyId, t.kind, t.idempotencyKey!);
  if (!turn) throw new Error(`api turn ${t.id} vanished after its insert`);
  return { turn, inserted: rowCount === 1 };
}

export async function getApiTurn(sql: Sql, id: string): Promise<ApiTurn | undefined> {
  const { rows } = await sql.query<ApiTurn>(`SELECT ${columns} FROM ${from} WHERE t.id = $1`, [id]);
  return rows[0];
}

export async function apiTurnByIdempotencyKey(sql: Sql, keyId: string, kind: ApiTurnKind, idempotencyKey: string): Promise<ApiTurn | undefined> {
  const { rows } = await sql.query<ApiTurn>(`SELECT ${columns} FROM ${from} WHERE t.key_id = $1 AND t.kind = $2 AND t.idempotency_key = $3`, [keyId, kind, idempotencyKey]);
  return rows[0];
}

/** Marks a stored response deleted; false when it was already gone. */
export async function deleteApiTurn(sql: Sql, id: string): Promise<boolean> {
  const { rowCount } = await sql.query(`UPDATE api_turns SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL`, [id]);
  return rowCount === 1;
}

export interface CallerSession {
  id: string;
  agentId: string;
  key: string;
  state: string;
  /** `users.platform_user_id` of the session's user (the caller identity on the API platform). */
  callerId: string;
  createdAt: Date;
  lastActivityAt: Date;
  messageCount: number;
}

/** Who may be listed: the identity itself, and identities under it (`<identity>:…`). */
/** Per agent, whose API sessions the caller sees: one identity (a user-bound or plain key), or all (null: a trusted backend). */
export interface IdentityScope {
  scopes: readonly { agentId: string; identity: string | null }[];
}

const sessionColumns = `s.id, s.agent_id AS "agentId", s.session_key AS key, s.state, u.platform_user_id AS "callerId", s.created_at AS "createdAt",
  GREATEST(s.updated_at, (SELECT max(m.created_at) FROM messages m WHERE m.session_id = s.id)) AS "lastActivityAt",
  (SELECT count(*)::int FROM messages m WHERE m.session_id = s.id AND m.role IN ('user', 'assistant')) AS "messageCount"`;
const ownUsers = `u.platform = 'api' AND EXISTS (SELECT 1 FROM unnest($1::uuid[], $2::text[]) AS sc(agent_id, identity)
  WHERE sc.agent_id = u.agent_id AND (sc.identity IS NULL OR u.platform_user_id = sc.identity))`;

/**
 * Sessions of the API users `scope` names, newest first
 * (created_at, then id), `limit` of them after the session `after` (a cursor from an earlier page).
 */
export async function listCallerSessions(sql: Sql, scope: IdentityScope, page: { limit: number; after?: string }): Promise<CallerSession[]> {
  const { rows } = await sql.query<CallerSession>(
    `SELECT ${sessionColumns}
     FROM users u JOIN sessions s ON s.user_id = u.id
     WHERE ${ownUsers}
       AND ($4::uuid IS NULL OR (s.created_at, s.id) < (SELECT c.created_at, c.id FROM sessions c WHERE c.id = $4::uuid))
     ORDER BY s.created_at DESC, s.id DESC
     LIMIT $3`,
    [scope.scopes.map((x) => x.agentId), scope.scopes.map((x) => x.identity), page.limit, page.after ?? null],
  );
  return rows;
}

/** One session, with its user's identity (the caller checks it is theirs). */
export async function getCallerSession(sql: Sql, sessionId: string): Promise<CallerSession | undefined> {
  const { rows } = await sql.query<CallerSession>(
    `SELECT ${sessionColumns} FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = $1 AND u.platform = 'api'`,
    [sessionId],
  );
  return rows[0];
}
