// Control signals for the turns this worker runs: one pattern subscription on the sessions'
// control channels, routed to the running turn of that session. Signals are also in Postgres;
// a turn reads the ones recorded before it subscribed (with its context), so none falls between.
// When the subscription drops (Redis restarted, or a silent connection was replaced), every
// running turn reads again the signals recorded meanwhile, once the subscription is back.
import type { Redis } from 'ioredis';
import { closeRedis, consumeSignal, duplicateRedis, parseSignal, pendingSignals, redisLiveness, releaseSignals, type Db, type Logger, type SessionSignal } from '../core/index.js';
import type { TurnControl } from '../agent/index.js';

/** A turn's subscription to its session's signals. */
export interface Watching {
  /** Delivers signals recorded before the subscription (read by the caller after subscribing). */
  catchUp(signals: readonly SessionSignal[]): void;
  /** Hands back the steers the model never saw (unconsumed again), so their own admissions run them. */
  release(): Promise<void>;
  stop(): void;
}

export interface ControlHub {
  /** Routes signals of `sessionId` for admissions after `admission` to `control` until stopped. */
  watch(db: Db, sessionId: string, admission: { id: string; seq: number }, control: TurnControl): Watching;
  close(): Promise<void>;
}

/** Why a turn stops, by the stop signal's text: a `/stop`, a new message (busy policy interrupt), the emergency stop. */
export const stopReason = (text: string): string => (text ? `stopped by ${text}` : 'stopped by /stop');

function act(control: TurnControl, s: SessionSignal): void {
  if (s.kind === 'stop') control.stop(stopReason(s.text));
  else if (s.kind === 'steer') control.steer(s.text, s.id);
  else control.redirect(s.text, s.id);
}

/** `silenceSeconds`: HERMES_REDIS_TIMEOUT_SECONDS, after which a silent subscription is replaced. */
export async function startControlHub(redis: Redis, prefix: string, log: Logger, silenceSeconds: number): Promise<ControlHub> {
  const sub = duplicateRedis(redis, { liveness: redisLiveness(silenceSeconds, log, 'control') });
  const listeners = new Map<string, (s: SessionSignal) => void>();
  /** Per running turn: read its session's signals recorded since it started (after a gap). */
  const rereads = new Map<string, () => void>();
  sub.on('pmessage', (_pattern: string, _channel: string, raw: string) => {
    const s = parseSignal(raw);
    if (s) listeners.get(s.sessionId)?.(s);
  });
  let gap = false;
  sub.on('close', () => { gap = true; });
  sub.on('ready', () => {
    if (!gap) return;
    gap = false;
    // ioredis subscribes again right after 'ready'; a PING sent after that answers once the
    // subscription is back, so every signal is either heard or already in Postgres.
    setImmediate(() => {
      sub.ping().then(() => { for (const reread of rereads.values()) reread(); }, () => undefined);
    });
  });
  await sub.psubscribe(`${prefix}:session:*:control`);
  return {
    watch(db, sessionId, admission, control) {
      const seen = new Set<string>();
      const deliver = (s: SessionSignal) => {
        if (s.admissionSeq <= admission.seq || seen.has(s.id)) return;
        seen.add(s.id);
        // Postgres decides who acted on it: the reply to the control message reports it.
        consumeSignal(db.pool, s.id, admission.id).then((mine) => { if (mine) act(control, s); }, (err: unknown) => log.warn({ err }, 'Recording a control signal failed'));
      };
      const reread = () => {
        pendingSignals(db.pool, sessionId, admission.seq).then(
          (signals) => { if (listeners.get(sessionId) === deliver) for (const s of signals) deliver(s); },
          (err: unknown) => log.warn({ err, sessionId }, 'Reading control signals after a Redis gap failed'),
        );
      };
      listeners.set(sessionId, deliver);
      rereads.set(sessionId, reread);
      return {
        catchUp: (signals) => { for (const s of signals) deliver(s); },
        release: async () => {
          const ids = control.unsent();
          if (ids.length) await releaseSignals(db.pool, ids, admission.id);
        },
        stop: () => {
          if (listeners.get(sessionId) !== deliver) return;
          listeners.delete(sessionId);
          rereads.delete(sessionId);
        },
      };
    },
    async close() {
      await closeRedis(sub);
    },
  };
}
