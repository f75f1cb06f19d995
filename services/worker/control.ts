// Control signals for the turns this worker runs: one pattern subscription on the sessions'
// control channels, routed to the running turn of that session. Signals are also in Postgres;
// a turn reads the ones recorded before it subscribed (with its context), so none falls between.
import type { Redis } from 'ioredis';
import { consumeSignal, parseSignal, releaseSignals, type Db, type Logger, type SessionSignal } from '../core/index.js';
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

export async function startControlHub(redis: Redis, prefix: string, log: Logger): Promise<ControlHub> {
  const sub = redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
  sub.on('error', () => undefined);
  const listeners = new Map<string, (s: SessionSignal) => void>();
  sub.on('pmessage', (_pattern: string, _channel: string, raw: string) => {
    const s = parseSignal(raw);
    if (s) listeners.get(s.sessionId)?.(s);
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
      listeners.set(sessionId, deliver);
      return {
        catchUp: (signals) => { for (const s of signals) deliver(s); },
        release: async () => {
          const ids = control.unsent();
          if (ids.length) await releaseSignals(db.pool, ids, admission.id);
        },
        stop: () => { if (listeners.get(sessionId) === deliver) listeners.delete(sessionId); },
      };
    },
    async close() {
      await sub.quit().catch(() => undefined);
    },
  };
}
