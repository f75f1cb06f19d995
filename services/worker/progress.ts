// Progress while a turn runs, on chat platforms (the adapter's ProgressChannel): Telegram, Discord
// and Teams show their typing indicator, re-sent on each "edit" (worker/platform-delivery.ts
// typingProgress; nothing to remove). Slack has no typing indicator for bots, so one
// "working…" message per turn — posted once the turn has run HERMES_PROGRESS_DELAY_SECONDS (quick
// answers show none), edited at most every HERMES_PROGRESS_EDIT_SECONDS with the elapsed time and
// the turn's steps, and removed by the delivery that sends the reply (its reference is recorded in
// progress_messages, so any worker can). Bounded and never in the turn's way: one platform call
// in flight at a time (a due edit while one is in flight is skipped), errors and rate limits are
// logged and dropped, and stopping waits at most 2 s for the call in flight.
import { recordProgressMessage, type Admission, type Db, type Logger } from '../core/index.js';
import type { DeliveryAdapter } from './delivery.js';

export interface ProgressOptions {
  adapter: DeliveryAdapter | undefined;
  adm: Admission;
  db: Db;
  log: Logger;
  timing: { delayMs: number; everyMs: number };
}

export interface TurnProgress {
  /** The turn made a step (a model call or a tool result). */
  tick(): void;
  /** The turn ended: no more calls; the message stays until the reply's delivery removes it. */
  stop(): Promise<void>;
}

const idle: TurnProgress = { tick: () => undefined, stop: () => Promise.resolve() };

export const progressText = (seconds: number, steps: number) => `⏳ working… (${seconds} s${steps > 0 ? `, ${steps} step${steps === 1 ? '' : 's'}` : ''})`;

export function startProgress(o: ProgressOptions): TurnProgress {
  const channel = o.adapter?.progress;
  if (!channel || !o.adm.replyTarget) return idle;
  const ref = { agentId: o.adm.agentId, target: o.adm.replyTarget };
  const started = Date.now();
  const aborter = new AbortController();
  let steps = 0;
  let messageId: string | undefined;
  let inFlight: Promise<void> | undefined;
  let stopped = false;
  const run = (call: () => Promise<void>) => {
    if (inFlight || stopped) return;
    inFlight = call()
      .catch((err: unknown) => o.log.debug({ err }, 'Progress message call failed (ignored)'))
      .finally(() => { inFlight = undefined; });
  };
  const text = () => progressText(Math.round((Date.now() - started) / 1_000), steps);
  const editTimer = setInterval(() => {
    if (messageId) run(() => channel.edit(ref, messageId!, text(), aborter.signal));
  }, o.timing.everyMs);
  editTimer.unref();
  const postTimer = setTimeout(() => run(async () => {
    const id = await channel.post(ref, text(), aborter.signal);
    if (!id) return;
    messageId = id;
    await recordProgressMessage(o.db.pool, { admissionId: o.adm.id, platform: o.adm.platform, target: o.adm.replyTarget, messageId: id });
  }), o.timing.delayMs);
  postTimer.unref();
  return {
    tick: () => { steps++; },
    async stop() {
      stopped = true;
      clearTimeout(postTimer);
      clearInterval(editTimer);
      const pending = inFlight;
      if (pending) await Promise.race([pending, new Promise((r) => setTimeout(r, 2_000).unref())]);
      aborter.abort();
    },
  };
}
