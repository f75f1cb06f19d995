// What the Postgres-only CLI commands share (memory, skills, review, pairing, kanban): a usage
// error that becomes a one-line message and exit 2, and the NAMESPACE/NAME agent they act on.
// Kept apart from the commands so that loading one does not load the others' dependencies.
import { findAgent, loadConfig, openDb, type AgentRecord, type Db } from '../core/index.js';

export class UsageError extends Error {}

/** Opens the database, finds `NAMESPACE/NAME`, runs `fn`, closes; errors become a message and exit 2. */
export async function withAgent(ref: string, fn: (db: Db, agent: AgentRecord) => Promise<void>): Promise<void> {
  const db = openDb(loadConfig(process.env, { REDIS_URL: process.env.REDIS_URL ?? 'redis://unused:6379' }).DATABASE_URL, { max: 2, applicationName: 'hermes-cli' });
  try {
    const [namespace, name, ...rest] = ref.split('/');
    if (!namespace || !name || rest.length) throw new UsageError(`name the agent as NAMESPACE/NAME (got "${ref}")`);
    const agent = await findAgent(db.pool, namespace, name);
    if (!agent) throw new UsageError(`no agent ${ref} in this database`);
    await fn(db, agent);
  } catch (err) {
    console.error(err instanceof UsageError ? err.message : `error: ${(err as Error).message}`);
    process.exitCode = 2;
  } finally {
    await db.close();
  }
}
