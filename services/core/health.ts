// Readiness checks shared by every process that answers probes (gateway, worker, operator):
// Postgres and Redis must answer within a short timeout. A failure names the dependency and a
// public reason only; the driver's text (hosts, ports, users) goes to the log, never the answer.
import type { Redis } from 'ioredis';
import type { Db } from './db.js';
import type { Logger } from './logger.js';

export interface CheckResult { ok: boolean; error?: string }

/** Socket errors that mean the server could not be reached at all (down, no route, no such host). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT']);
const unreachable = (err: unknown): boolean => err instanceof NotConnected || UNREACHABLE.has(String((err as { code?: unknown } | undefined)?.code));

/** A client that is not connected: the server was not reachable when it last tried. */
class NotConnected extends Error {}

/**
 * PING, or "not reachable" at once while the connection is not up (ioredis still connecting or
 * reconnecting): a fail-fast connection would fail with "Stream isn't writeable…" and any other
 * would queue the PING until Redis is back, so neither said that Redis cannot be reached.
 */
const pingRedis = async (redis: Redis): Promise<unknown> => {
  if (['wait', 'connecting', 'reconnecting', 'close', 'end'].includes(redis.status)) throw new NotConnected(`Redis connection is ${redis.status} (the connection errors are logged as they happen)`);
  return redis.ping();
};

/**
 * Runs `probe`, failing it when it throws or does not answer within `timeoutMs`. The result says
 * only "no answer within N ms", "not reachable" (a refused or unroutable connection) or "failed";
 * `onError` receives the cause (to log it).
 */
export async function checkWithin(probe: () => Promise<unknown>, timeoutMs: number, onError?: (err: unknown) => void): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), timeoutMs); });
  try {
    const outcome = await Promise.race([probe(), late]);
    if (outcome === 'late') {
      onError?.(new Error(`no answer within ${timeoutMs} ms`));
      return { ok: false, error: `no answer within ${timeoutMs} ms` };
    }
    return { ok: true };
  } catch (err) {
    onError?.(err);
    return { ok: false, error: unreachable(err) ? 'not reachable (the cause is in the process log)' : 'failed (the cause is in the process log)' };
  } finally {
    clearTimeout(timer);
  }
}

export interface Readiness {
  ready: boolean;
  checks: Record<string, CheckResult>;
  /** "postgres (…), redis (…)" — what failed, for the 503 body. */
  failed: string[];
}

/** Named check results → ready or not, and what failed in words. */
export function summarizeChecks(checks: Record<string, CheckResult>): Readiness {
  const failed = Object.entries(checks).filter(([, c]) => !c.ok).map(([name, c]) => `${name} (${c.error})`);
  return { ready: failed.length === 0, checks, failed };
}

/** Postgres and Redis checks plus any process-specific ones (e.g. "shutting down"); failures are logged with their cause. */
export async function readiness(deps: { db: Db; redis: Redis; log?: Logger }, timeoutMs: number, extra: Record<string, CheckResult> = {}): Promise<Readiness> {
  const logAs = (dependency: string) => (err: unknown) => deps.log?.warn({ err, dependency }, `Readiness check of ${dependency} failed`);
  const [postgres, redis] = await Promise.all([
    checkWithin(() => deps.db.pool.query('select 1'), timeoutMs, logAs('postgres')),
    checkWithin(() => pingRedis(deps.redis), timeoutMs, logAs('redis')),
  ]);
  return summarizeChecks({ postgres, redis, ...extra });
}

/** The URL a local client reaches a server on: a wildcard listen address becomes 127.0.0.1; port 0 becomes the port taken. */
export function listeningUrl(server: { address(): unknown }, host: string, port: number): string {
  const address = server.address();
  const actual = typeof address === 'object' && address && 'port' in address ? (address as { port: number }).port : port;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${actual}`;
}
