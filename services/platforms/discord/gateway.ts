// One Discord Gateway connection (WebSocket, API v10, JSON), for one bot: HELLO (op 10) → IDENTIFY
// (op 2, with the intents) or RESUME (op 6, after a drop) → READY / RESUMED; heartbeats (op 1)
// every heartbeat_interval, acknowledged by op 11 (an unacknowledged one means a zombie link:
// closed and resumed); op 1 from Discord asks for a heartbeat now, op 7 to reconnect (resume),
// op 9 says the session is invalid (resumable or not). The Gateway URL comes from GET /gateway/bot
// at the configured REST base; resumes go to READY's resume_gateway_url.
//
// Written on `ws` rather than @discordjs/ws: one shard per bot is what an agent needs (Discord
// asks for sharding only past 2 500 guilds), the connection's life must follow the leader lock's
// signal exactly, the REST base must be ours (HERMES_DISCORD_API_URL, proxies), and — the reason
// that matters most — the sequence number we resume from is the last dispatch we *admitted*: when
// an admission fails (Postgres down) the connection is closed and resumed from before it, so
// Discord replays the message instead of it being lost. Replays are deduplicated by message id.
import WebSocket from 'ws';
import type { Logger } from '../../core/index.js';
import type { DiscordRest } from './rest.js';

/** GUILD_MESSAGES (1 << 9) | DIRECT_MESSAGES (1 << 12) | MESSAGE_CONTENT (1 << 15). */
export const DISCORD_INTENTS = (1 << 9) | (1 << 12) | (1 << 15);

/** Close codes after which reconnecting cannot help: the token, shard, version or intents are wrong. */
const FATAL_CLOSE_CODES: ReadonlyMap<number, string> = new Map([
  [4004, 'the bot token (DISCORD_BOT_TOKEN) was refused'],
  [4010, 'invalid shard'],
  [4011, 'the bot needs sharding (more than 2 500 guilds), which this connector does not do'],
  [4012, 'invalid Gateway API version'],
  [4013, 'invalid intents'],
  [4014, 'the Message Content intent (or another privileged intent) is not enabled for this bot in the Developer Portal'],
]);
/** Close codes after which the session cannot be resumed: identify anew. */
const NEW_SESSION_CLOSE_CODES: ReadonlySet<number> = new Set([4007, 4009]);

export class DiscordGatewayFatal extends Error {
  override name = 'DiscordGatewayFatal';
}

export interface GatewayHandlers {
  /** READY: who we are (the bot user's id, for the mention rule). */
  ready(user: { id: string; username?: string }): void;
  /** A dispatch (op 0) other than READY / RESUMED; a rejection closes the link and resumes before it. */
  dispatch(type: string, data: unknown): Promise<void>;
}

export interface GatewayOptions {
  rest: DiscordRest;
  token: string;
  log: Logger;
  handlers: GatewayHandlers;
  /** @defaultValue DISCORD_INTENTS */
  intents?: number;
  /** Wait before reconnecting, by attempt. @defaultValue 1 s doubling to 30 s */
  backoffMs?: (attempt: number) => number;
}

interface Session { id: string; seq: number | null; resumeUrl: string }

interface Frame { op: number; d?: unknown; s?: number | null; t?: string | null }

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  if (signal.aborted) return resolve();
  const t = setTimeout(done, ms);
  function done() { clearTimeout(t); signal.removeEventListener('abort', done); resolve(); }
  signal.addEventListener('abort', done, { once: true });
});

const withQuery = (url: string) => `${url.replace(/\/+$/, '')}/?v=10&encoding=json`;

/** Holds the bot's Gateway connection until `signal` aborts; reconnects (resuming) on drops. */
export async function runDiscordGateway(opts: GatewayOptions, signal: AbortSignal): Promise<void> {
  const { url } = await opts.rest.request<{ url: string }>('GET', '/gateway/bot', { signal });
  const state: { session?: Session } = {};
  const backoff = opts.backoffMs ?? ((n: number) => Math.min(30_000, 1_000 * 2 ** (n - 1)));
  let attempt = 0;
  while (!signal.aborted) {
    const result = await connectOnce(opts, state, state.session?.resumeUrl ?? url, signal);
    if (signal.aborted) return;
    const fatal = FATAL_CLOSE_CODES.get(result.code);
    if (fatal) throw new DiscordGatewayFatal(`Discord closed the Gateway connection with ${result.code}: ${fatal}`);
    if (NEW_SESSION_CLOSE_CODES.has(result.code)) state.session = undefined;
    attempt = result.established ? 1 : attempt + 1;
    opts.log.info({ code: result.code, resume: state.session !== undefined, attempt }, 'Discord Gateway connection closed; reconnecting');
    await sleep(result.established ? 0 : backoff(attempt), signal);
  }
}

/** One WebSocket's life; resolves with its close code, and whether it got as far as READY / RESUMED. */
function connectOnce(opts: GatewayOptions, state: { session?: Session }, url: string, signal: AbortSignal): Promise<{ code: number; established: boolean }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(withQuery(url), { handshakeTimeout: 15_000 });
    let heartbeat: NodeJS.Timeout | undefined;
    let acked = true;
    let established = false;
    let closing = false;
    /** Dispatches run one at a time, in order; `seq` advances only past the ones handled. */
    let chain = Promise.resolve();
    const send = (frame: Frame) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame)); };
    const beat = () => {
      if (!acked) { close(4000, 'no heartbeat acknowledgement (zombie connection)'); return; }
      acked = false;
      send({ op: 1, d: state.session?.seq ?? null });
    };
    const close = (code: number, why: string) => {
      if (closing) return;
      closing = true;
      opts.log.info({ code, why }, 'Closing the Discord Gateway connection');
      ws.close(code);
      // A peer that never answers the close: do not wait for it.
      setTimeout(() => ws.terminate(), 5_000).unref();
    };
    const onAbort = () => close(1000, 'stopped (leadership handed over or the agent changed)');
    signal.addEventListener('abort', onAbort, { once: true });

    const hello = (d: { heartbeat_interval?: number }) => {
      const every = Math.max(1_000, d.heartbeat_interval ?? 41_250);
      heartbeat = setTimeout(function tick() { beat(); heartbeat = setTimeout(tick, every); }, Math.floor(every * Math.random()));
      const s = state.session;
      if (s) send({ op: 6, d: { token: opts.token, session_id: s.id, seq: s.seq } });
      else send({ op: 2, d: { token: opts.token, intents: opts.intents ?? DISCORD_INTENTS, properties: { os: process.platform, browser: 'hermes-operator', device: 'hermes-operator' } } });
    };

    const dispatch = (f: Frame) => {
      if (f.t === 'READY') {
        const d = f.d as { session_id: string; resume_gateway_url: string; user: { id: string; username?: string } };
        state.session = { id: d.session_id, seq: f.s ?? null, resumeUrl: d.resume_gateway_url };
        established = true;
        opts.handlers.ready(d.user);
        opts.log.info({ bot: d.user.id }, 'Connected to the Discord Gateway');
        return;
      }
      if (f.t === 'RESUMED') { established = true; opts.log.info('Resumed the Discord Gateway session'); return; }
      const seq = f.s ?? null;
      chain = chain.then(async () => {
        if (closing) return;
        try {
          await opts.handlers.dispatch(f.t ?? '', f.d);
          if (state.session && seq !== null) state.session.seq = seq;
        } catch (err) {
          opts.log.warn({ err, event: f.t, seq }, 'Could not handle a Discord event; resuming before it so Discord sends it again');
          established = false; // back off before the resume: whatever failed may take a while to return
          close(4000, 'an event could not be handled');
        }
      });
    };

    ws.on('message', (raw) => {
      let f: Frame;
      try { f = JSON.parse(String(raw)) as Frame; } catch { return; }
      if (f.op === 10) hello(f.d as { heartbeat_interval?: number });
      else if (f.op === 11) acked = true;
      else if (f.op === 1) { acked = true; beat(); }
      else if (f.op === 7) close(4000, 'Discord asked for a reconnect');
      else if (f.op === 9) {
        if (f.d !== true) state.session = undefined;
        close(4000, 'Discord invalidated the session');
      } else if (f.op === 0) dispatch(f);
    });
    ws.on('error', (err) => opts.log.warn({ err }, 'Discord Gateway connection error'));
    ws.on('close', (code) => {
      clearTimeout(heartbeat);
      signal.removeEventListener('abort', onAbort);
      closing = true;
      // Only once the dispatches already taken are done: `seq` must be settled before a resume.
      void chain.then(() => resolve({ code, established }));
    });
  });
}
