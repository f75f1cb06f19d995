// The one LISTEN connection a process keeps for config changes (NOTIFY on `hermes_config`).
//
// Exactly one client is live at a time. pg emits several events for one loss ('error' for the
// FATAL message, another 'error', then 'end'; a failed connect rejects *and* ends), so every
// event of a client funnels into `lost(client)`, which acts only while that client is the current
// one: it detaches and ends the client, then schedules ONE reconnect with capped exponential
// backoff and jitter. A ping on the connection catches a half-open path that would otherwise
// keep us "listening" to nothing. Whoever caches config hears `onResync` when the connection is
// lost and again once it is back, so a NOTIFY missed while down is never lost.
import pg from 'pg';
import { endWithin } from './db.js';
import type { Logger } from './logger.js';

/** The timer functions the listener schedules with (injectable, so tests drive backoff without waiting). */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface ListenerTuning {
  /** First reconnect delay. @defaultValue 250 */
  initialBackoffMs: number;
  /** Largest reconnect delay. @defaultValue 10000 */
  maxBackoffMs: number;
  /** A connect (TCP + startup + LISTEN) taking longer than this fails. @defaultValue 5000 */
  connectTimeoutMs: number;
  /** How often the live connection is checked with `SELECT 1`. @defaultValue 30000 */
  pingMs: number;
  /** A ping unanswered this long counts as a lost connection. @defaultValue 5000 */
  pingTimeoutMs: number;
  timers: Timers;
  /** Jitter source in [0, 1). @defaultValue Math.random */
  random: () => number;
}

export const defaultListenerTuning: ListenerTuning = {
  initialBackoffMs: 250, maxBackoffMs: 10_000, connectTimeoutMs: 5_000, pingMs: 30_000, pingTimeoutMs: 5_000,
  timers: realTimers, random: Math.random,
};

/**
 * The delay before reconnect attempt `attempt` (1 = the first after a loss): the ceiling doubles
 * from `initialMs` up to `maxMs`; half of it is fixed and half random ("equal jitter"), so a fleet
 * restarting together spreads out, yet no attempt comes sooner than half the ceiling.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 30));
  return ceiling / 2 + (random() * ceiling) / 2;
}

export type ResyncReason = 'lost' | 'connected';

export interface ConfigListenerOptions {
  databaseUrl: string;
  channel: string;
  /** `application_name` of the connection (how it shows in pg_stat_activity). */
  applicationName: string;
  onNotify(payload: string | undefined): void;
  /** The connection was lost, or is (back) up: anything cached from before may be stale. */
  onResync(reason: ResyncReason): void;
  /** Called after each successful reconnect (not the first connect): count it. */
  onReconnected?(): void;
  log?: Logger;
  tuning?: Partial<ListenerTuning>;
}

export class ConfigListener {
  private readonly tuning: ListenerTuning;
  /** The one client we own: connecting or connected. */
  private client: pg.Client | undefined;
  private retryTimer: unknown;
  private pingTimer: unknown;
  private failures = 0;
  private lostAt: number | undefined;
  private everConnected = false;
  private stopped = false;
  private connected = false;

  constructor(private readonly opts: ConfigListenerOptions) {
    this.tuning = { ...defaultListenerTuning, ...opts.tuning };
  }

  /** True while LISTEN is in place on a live connection. */
  get listening(): boolean {
    return this.connected;
  }

  /** Connects once; when that fails, reconnects in the background (never throws). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  private async connect(): Promise<void> {
    this.retryTimer = undefined;
    if (this.stopped || this.client) return;
    const client = new pg.Client({
      connectionString: this.opts.databaseUrl,
      application_name: this.opts.applicationName,
      connectionTimeoutMillis: this.tuning.connectTimeoutMs,
      keepAlive: true,
    });
    this.client = client;
    client.on('notification', (m) => { if (this.client === client) this.opts.onNotify(m.payload); });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    // pg's own timeout covers the TCP connect and startup only; LISTEN on a stalled path needs one too.
    const deadline = this.tuning.timers.setTimeout(() => this.lost(client, new Error(`no connection within ${this.tuning.connectTimeoutMs} ms`)), this.tuning.connectTimeoutMs);
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(this.opts.channel)}`);
    } catch (err) {
      this.lost(client, err);
      return;
    } finally {
      this.tuning.timers.clearTimeout(deadline);
    }
    if (this.client !== client) return; // lost (and ended) or stopped meanwhile
    this.connected = true;
    if (this.everConnected) {
      this.opts.log?.info({ attempts: this.failures, downMs: this.lostAt === undefined ? undefined : Date.now() - this.lostAt }, 'Config listener reconnected to Postgres; agent config cache refreshed');
      this.opts.onReconnected?.();
    }
    this.everConnected = true;
    this.failures = 0;
    this.lostAt = undefined;
    this.opts.onResync('connected');
    this.schedulePing(client);
  }

  private schedulePing(client: pg.Client): void {
    const { timers, pingMs, pingTimeoutMs } = this.tuning;
    this.pingTimer = timers.setTimeout(() => {
      if (this.client !== client) return;
      const deadline = timers.setTimeout(() => this.lost(client, new Error(`ping unanswered for ${pingTimeoutMs} ms`)), pingTimeoutMs);
      client.query('SELECT 1').then(
        () => { timers.clearTimeout(deadline); if (this.client === client) this.schedulePing(client); },
        (err: unknown) => { timers.clearTimeout(deadline); this.lost(client, err); },
      );
    }, pingMs);
  }

  /** Every event of a lost client lands here; only the first one for the current client acts. */
  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    const wasConnected = this.connected;
    this.connected = false;
    this.tuning.timers.clearTimeout(this.pingTimer);
    client.removeAllListeners();
    client.on('error', () => undefined); // late socket errors of a discarded client
    client.end().catch(() => undefined);
    this.opts.onResync('lost');
    if (this.stopped) return;
    this.failures++;
    this.lostAt ??= Date.now();
    const delayMs = Math.round(backoffDelay(this.failures, this.tuning.initialBackoffMs, this.tuning.maxBackoffMs, this.tuning.random));
    const reason = (err as Error | undefined)?.message ?? 'connection ended';
    if (wasConnected) this.opts.log?.warn({ reason, retryInMs: delayMs }, 'Config listener lost its Postgres connection; reconnecting');
    else this.opts.log?.debug({ reason, attempt: this.failures, retryInMs: delayMs }, 'Config listener could not connect to Postgres; retrying');
    this.retryTimer = this.tuning.timers.setTimeout(() => void this.connect(), delayMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.tuning.timers.clearTimeout(this.retryTimer);
    this.tuning.timers.clearTimeout(this.pingTimer);
    this.retryTimer = undefined;
    const client = this.client;
    this.client = undefined;
    this.connected = false;
    if (!client) return;
    client.removeAllListeners();
    client.on('error', () => undefined);
    await endWithin(client.end());
  }
}
