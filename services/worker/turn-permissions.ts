// The permissions of the person whose turn this is (team mode, core/permissions.ts): their
// platform and user id (users row) and the chat (from the session key), read once per turn.
// API users are stored escaped (`alice`, `team%3Aalice`) or as the key itself (`k:<keyId>`).
import {
  ALL_PERMISSIONS, chatOfSessionKey, permissionsFor, type Admission, type CompiledAgent, type Db, type Permissions,
} from '../core/index.js';

const unescape = (s: string) => s.replace(/%3A/g, ':').replace(/%25/g, '%');

export async function turnPermissions(db: Pick<Db, 'pool'>, agent: CompiledAgent, adm: Admission): Promise<Permissions> {
  if (!agent.access && !agent.admins?.length) return ALL_PERMISSIONS;
  const { rows } = await db.pool.query<{ platform: string | null; user: string | null; key: string }>(
    `SELECT u.platform, u.platform_user_id AS "user", s.session_key AS key
     FROM sessions s LEFT JOIN users u ON u.id = $2::uuid WHERE s.id = $1::uuid`, [adm.sessionId, adm.userId]);
  const row = rows[0];
  // No known person (cron, a system turn): only the default applies.
  if (!row?.platform || !row.user) return permissionsFor(agent, { platform: adm.platform, userId: '' });
  const userId = row.platform === 'api' ? unescape(row.user) : row.user;
  const chatId = chatOfSessionKey(row.key);
  return permissionsFor(agent, { platform: row.platform, userId, ...(chatId !== undefined ? { chatId } : {}) });
}
