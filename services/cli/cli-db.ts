// What the Postgres-only CLI commands share (agents, cron, memory, skills, review, pairing,
// kanban): a small pool on DATABASE_URL, errors that become a one-line message and exit 2, and
// the agent a command acts on. Kept apart from the commands so that loading one does not load the
// others' dependencies.
import { InvalidArgumentError } from 'commander';
import { describePostgresFailure, findAgent, loadConfig, openDb, type AgentRecord, type Db } from '../core/index.js';

/**
 * A whole-number argument or option from `min` to 2^31-1 (a Postgres integer): anything else is
 * refused by the parser (exit 1, naming it), before any database work.
 */
export const wholeNumber = (min: number) => (v: string): number => {
  const n = Number(v);
  if (!/^\s*-?\d+\s*$/.test(v) || n < min || n > 2_147_483_647) throw new InvalidArgumentError(`expected a whole number from ${min} to 2147483647.`);
  return n;
};

/** A mistake in the command line or its target: its message is for the user as it is. */
export class UsageError extends Error {}

/**
 * Opens the database, runs `fn`, closes. A `UsageError` (or an error of a class in `plain`) is
 * printed as its message, a Postgres it cannot use as the server and why, any other as
 * `error: …`; either way the exit code is 2. A missing or bad DATABASE_URL is a ConfigError,
 * which the CLI's entry point reports the same way.
 */
export async function withDb(fn: (db: Db) => Promise<void>, plain: readonly (abstract new (...args: never[]) => Error)[] = []): Promise<void> {
  const { DATABASE_URL } = loadConfig(process.env, { REDIS_URL: process.env.REDIS_URL ?? 'redis://unused:6379' });
  const db = openDb(DATABASE_URL, { max: 2, applicationName: 'hermes-cli' });
  try {
    await fn(db);
  } catch (err) {
    const forUser = err instanceof UsageError || plain.some((c) => err instanceof c);
    console.error(forUser ? (err as Error).message : describePostgresFailure(err, DATABASE_URL) ?? `error: ${(err as Error).message}`);
    process.exitCode = 2;
  } finally {
    await db.close();
  }
}

export interface AgentRefOptions {
  /** The namespace of a bare NAME; without it, the agent must be named as NAMESPACE/NAME. */
  namespace?: string;
  /** Said after "no agent … in this database" (which forms the command takes). */
  hint?: string;
}

/** `NAMESPACE/NAME` as its two parts, or a bare `NAME` in `namespace` when one is given; undefined for anything else. */
export function splitRef(ref: string, namespace?: string): [string, string] | undefined {
  const parts = ref.split('/');
  if (namespace !== undefined && parts.length === 1 && parts[0]) return [namespace, parts[0]];
  if (parts.length === 2 && parts[0] && parts[1]) return [parts[0], parts[1]];
  return undefined;
}

/** `withDb` on the agent `ref` names (a usage error when there is none). */
export function withAgent(ref: string, fn: (db: Db, agent: AgentRecord) => Promise<void>, opts: AgentRefOptions = {}): Promise<void> {
  return withDb(async (db) => {
    const split = splitRef(ref, opts.namespace);
    if (!split) throw new UsageError(`name the agent as ${opts.namespace !== undefined ? 'NAME or ' : ''}NAMESPACE/NAME (got "${ref}")`);
    const [namespace, name] = split;
    const agent = await findAgent(db.pool, namespace, name);
    if (!agent) throw new UsageError(`no agent ${namespace}/${name} in this database${opts.hint ? ` (${opts.hint})` : ''}`);
    await fn(db, agent);
  });
}
