// What the Postgres-only CLI commands share (agents, memory, skills, review, pairing, kanban): a
// usage error that becomes a one-line message and exit 2, and the agent a command acts on.
// Kept apart from the commands so that loading one does not load the others' dependencies.
import { findAgent, loadConfig, openDb, type AgentRecord, type Db } from '../core/index.js';

export class UsageError extends Error {}

export interface AgentRefOptions {
  /** The namespace of a bare NAME; without it, the agent must be named as NAMESPACE/NAME. */
  namespace?: string;
  /** Said after "no agent … in this database" (which forms the command takes). */
  hint?: string;
}

/** `NAMESPACE/NAME`, or `NAME` when a default namespace is given. */
function agentRef(ref: string, namespace: string | undefined): [string, string] {
  const parts = ref.split('/');
  if (namespace !== undefined && parts.length === 1 && parts[0]) return [namespace, parts[0]];
  if (parts.length === 2 && parts[0] && parts[1]) return [parts[0], parts[1]];
  throw new UsageError(`name the agent as ${namespace !== undefined ? 'NAME or ' : ''}NAMESPACE/NAME (got "${ref}")`);
}

/** Opens the database, finds the agent `ref` names, runs `fn`, closes; errors become a message and exit 2. */
export async function withAgent(ref: string, fn: (db: Db, agent: AgentRecord) => Promise<void>, opts: AgentRefOptions = {}): Promise<void> {
  const db = openDb(loadConfig(process.env, { REDIS_URL: process.env.REDIS_URL ?? 'redis://unused:6379' }).DATABASE_URL, { max: 2, applicationName: 'hermes-cli' });
  try {
    const [namespace, name] = agentRef(ref, opts.namespace);
    const agent = await findAgent(db.pool, namespace, name);
    if (!agent) throw new UsageError(`no agent ${namespace}/${name} in this database${opts.hint ? ` (${opts.hint})` : ''}`);
    await fn(db, agent);
  } catch (err) {
    console.error(err instanceof UsageError ? err.message : `error: ${(err as Error).message}`);
    process.exitCode = 2;
  } finally {
    await db.close();
  }
}
