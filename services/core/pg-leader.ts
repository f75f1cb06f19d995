// One active holder of a named job across every replica of a process (Slack Socket Mode, the
// Telegram poller, the Discord Gateway connection, the cron scheduler, the Kanban dispatcher),
// without Kubernetes: a Postgres session-level advisory lock on a dedicated connection.
//
// Why an advisory lock: Postgres releases it the moment the holding session ends — a crashed or
// SIGKILLed holder, a Postgres restart, a cut network path — so failover needs no lease expiry
// bookkeeping and two holders are impossible while the server is up. The holder pings its
// connection; an unanswered ping (a half-open path) counts as lost: the job is told to stop at
// once (its AbortSignal) and the lock is tried again on a fresh connection, with backoff. Because
// a half-open holder may not yet know it lost the lock when the server already granted it to
// another replica, jobs must keep their own writes idempotent (the ledger's dedupe rows do) —
// the window is at most one ping period.
import pg from 'pg';
import { backoffDelay } from './config-listener.js';
import { endWithin } from './db.js';
import { pause as sleep } from './pause.js';
import type { Logger } from './logger.js';

export interface LeaderTuning {
  /** How often a holder (or a waiting candidate) checks its connection / retries the lock. @defaultValue 2000 */
  pingMs: number;
  /** A ping unanswered this long counts as a lost connection. @defaultValue 5000 */
  pingTimeoutMs: number;
  /** A connect taking longer than this fails. @defaultValue 5000 */
  connectTimeoutMs: number;
  /** Reconnect backoff after a lost connection. @defaultValue 250 … 10000 */
  initialBackoffMs: number;
  maxBackoffMs: number;
}

export const defaultLeaderTuning: LeaderTuning = { pingMs: 2_000, pingTimeoutMs: 5_000, connectTimeoutMs: 5_000, initialBackoffMs: 250, maxBackoffMs: 10_000 };

export interface LeaderOptions {
  databaseUrl: string;
  /** The job's name, e.g. `slack-socket:<app id>`; one holder per name. */
  name: string;
  /** Runs while this replica holds the lock; must return (or throw) soon after `signal` aborts. */
  lead: (signal: AbortSignal) => Promise<void>;
  log: Logger;
  tuning?: Partial<LeaderTuning>;
}

export interface Leadership {
  /** True while this replica holds the lock and its job runs. */
  readonly leading: boolean;
  /** Stops leading (the job's signal aborts), releases the lock and closes the connection. */
  stop(): Promise<void>;
}

/** Rejects when `p` takes longer than `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms); });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Starts campaigning for `name` at once and returns; `lead` runs each time this replica wins, and
 * is aborted when the lock is lost or `stop()` is called.
 */
export function runAsLeader(opts: LeaderOptions): Leadership {
  const t = { ...defaultLeaderTuning, ...opts.tuning };
  const log = opts.log.child({ leader: opts.name });
  const stopping = new AbortController();
  let leading = false;
  let client: pg.Client | undefined;

  async function connect(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: opts.databaseUrl, connectionTimeoutMillis: t.connectTimeoutMs, keepAlive: true, application_name: `hermes-leader` });
    c.on('error', (err) => log.debug({ err }, 'Leader connection error'));
    await within(c.connect(), t.connectTimeoutMs + 1_000, 'connect');
    return c;
  }

  /** One connection's life: try the lock until won, lead until the connection is lost or we stop. */
  async function campaign(c: pg.Client): Promise<void> {
    while (!stopping.signal.aborted) {
      const won = await within(c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', [opts.name]), t.pingTimeoutMs, 'lock attempt');
      if (won.rows[0]?.ok) break;
      await sleep(t.pingMs, stopping.signal);
    }
    if (stopping.signal.aborted) return;
    const lost = new AbortController();
    const signal = AbortSignal.any([lost.signal, stopping.signal]);
    leading = true;
    log.info('Leading');
    let ended = false;
    const start = () => opts.lead(signal).catch((err: unknown) => log.error({ err }, 'The leader job failed; it is started again while we lead')).then(() => { ended = true; });
    let job = start();
    try {
      while (!signal.aborted) {
        await sleep(t.pingMs, signal);
        if (signal.aborted) break;
        try {
          await within(c.query('SELECT 1'), t.pingTimeoutMs, 'ping');
        } catch (err) {
          log.warn({ err }, 'Lost the leader connection; stopping the job');
          lost.abort();
          throw err;
        }
        // The job returned on its own while we still lead: run it again (one ping period later).
        if (ended && !signal.aborted) {
          ended = false;
          job = start();
        }
      }
    } finally {
      leading = false;
      lost.abort();
      await job;
      log.info('Stopped leading');
    }
  }

  const loop = (async () => {
    let attempt = 0;
    while (!stopping.signal.aborted) {
      try {
        client = await connect();
        attempt = 0;
        await campaign(client);
      } catch (err) {
        attempt++;
        log.debug({ err, attempt }, 'Leader campaign interrupted; retrying');
      } finally {
        const c = client;
        client = undefined;
        if (c) {
          // Unlock explicitly when we can (a clean stop hands over at once); ending the session releases it anyway.
          await within(c.query('SELECT pg_advisory_unlock_all()'), 1_000, 'unlock').catch(() => undefined);
          await endWithin(c.end(), 1_000).catch(() => undefined);
        }
      }
      if (!stopping.signal.aborted && attempt > 0) await sleep(backoffDelay(attempt, t.initialBackoffMs, t.maxBackoffMs, Math.random), stopping.signal);
    }
  })();

  return {
    get leading() { return leading; },
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
