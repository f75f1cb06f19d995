// The permissions of the person whose turn this is (team mode, core/permissions.ts): their
// platform and user id (users row) and the chat (from the session key), read once per turn.
// API users are stored escaped (`alice`, `team%3Aalice`) or as the key itself (`k:<keyId>`).
// A dispatched Kanban task on a person's board runs as that person: their grants, narrowed as
// their platform narrows its own turns (the signed webhook: untrusted input), so `/kanban create`
// or kanban_create never reaches a tool the person's own turns are not offered.
import {
  ALL_PERMISSIONS, chatOfSessionKey, permissionsFor, type Admission, type CompiledAgent, type Db, type Permissions,
} from '../core/index.js';
import { platformToolsets } from '../platforms/index.js';

const unescape = (s: string) => s.replace(/%3A/g, ':').replace(/%25/g, '%');

interface Person { platform: string | null; user: string | null }

/** The owner of the board whose task the dispatched turn `adm` runs; undefined on an operator's board. */
async function kanbanOwner(db: Pick<Db, 'pool'>, adm: Admission): Promise<Person | undefined> {
  const { rows } = await db.pool.query<Person>(
    `SELECT u.platform, u.platform_user_id AS "user"
     FROM kanban_runs r JOIN kanban_tasks t ON t.id = r.task_id JOIN kanban_boards b ON b.id = t.board_id JOIN users u ON u.id = b.owner_user_id
     WHERE r.admission_id = $1::uuid`, [adm.id]);
  return rows[0];
}

const permissionsOf = (agent: CompiledAgent, person: { platform: string; user: string }, chatId?: string): Permissions =>
  permissionsFor(agent, { platform: person.platform, userId: person.platform === 'api' ? unescape(person.user) : person.user, ...(chatId !== undefined ? { chatId } : {}) });

/** `perms` limited further to the toolsets `platform` offers its turns (Agent spec.platforms[].toolsets, the webhook default). */
function narrowedTo(agent: CompiledAgent, platform: string, perms: Permissions): Permissions {
  const narrowed = platformToolsets(agent, platform);
  if (!narrowed) return perms;
  return { ...perms, toolsets: perms.toolsets === 'all' ? narrowed : perms.toolsets.filter((t) => narrowed.includes(t)) };
}

export async function turnPermissions(db: Pick<Db, 'pool'>, agent: CompiledAgent, adm: Admission): Promise<Permissions> {
  if (adm.platform === 'kanban') {
    const owner = await kanbanOwner(db, adm);
    if (owner?.platform && owner.user) return narrowedTo(agent, owner.platform, permissionsOf(agent, { platform: owner.platform, user: owner.user }));
  }
  if (!agent.access && !agent.admins?.length) return ALL_PERMISSIONS;
  const { rows } = await db.pool.query<{ platform: string | null; user: string | null; key: string }>(
    `SELECT u.platform, u.platform_user_id AS "user", s.session_key AS key
     FROM sessions s LEFT JOIN users u ON u.id = $2::uuid WHERE s.id = $1::uuid`, [adm.sessionId, adm.userId]);
  const row = rows[0];
  // No known person (cron, a system turn): only the default applies.
  if (!row?.platform || !row.user) return permissionsFor(agent, { platform: adm.platform, userId: '' });
  return permissionsOf(agent, { platform: row.platform, user: row.user }, chatOfSessionKey(row.key));
}
