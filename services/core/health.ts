// Readiness checks shared by every process that answers probes (gateway, worker): Postgres and
// Redis must answer within a short timeout; a failure names the dependency and the error.
import type { Redis } from 'ioredis';
import type { Db } from './db.js';

export interface CheckResult { ok: boolean; error?: string }

/** Runs `probe`, failing it when it does not answer within `timeoutMs`. */
export async function checkWithin(probe: () => Promise<unknown>, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs); });
  try {
    await Promise.race([probe(), late]);
    return { ok: true };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
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

/** Postgres and Redis checks plus any process-specific ones (e.g. "shutting down"). */
export async function readiness(deps: { db: Db; redis: Redis }, timeoutMs: number, extra: Record<string, CheckResult> = {}): Promise<Readiness> {
  const [postgres, redis] = await Promise.all([
    checkWithin(() => deps.db.pool.query('select 1'), timeoutMs),
    checkWithin(() => deps.redis.ping(), timeoutMs),
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
