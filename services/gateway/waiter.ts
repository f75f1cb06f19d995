// Waiting for a turn: subscribe to the admission's channel FIRST, then read Postgres, then follow
// the process-wide status poll (status-poller.ts: one narrow statement per tick for every
// followed admission), reading early on each "changed" ping. Postgres decides when the turn is
// over; pub/sub only brings text deltas and shortens the wait, so a lost message costs latency,
// never correctness. The reply text is read once, when the turn has settled. A turn cut by a
// worker shutdown resumes under a new admission (its `resume`): the follower moves on to it, so
// the caller still gets the one reply it is waiting for. The one exception to "read Postgres": a
// finished turn's "changed" event carries what its committed transaction wrote (events.ts), and is
// answered from at once — a lost event still costs only latency (the poll reads the same).
import {
  HermesError, admissionChannel, continuationOf, getAdmissionStatus, parseTurnEvent, readTurnEnd,
  type AdmissionProgress, type AdmissionStatus, type Db, type FollowedProgress, type Logger, type Obligation, type TurnEvent, type TurnUsage,
} from '../core/index.js';
import type { StatusPoller } from './status-poller.js';
import type { ChannelHub, Subscription } from './subscriber.js';

export interface TurnEnd {
  admission: AdmissionProgress;
  /** The reply obligation: the final text (or, for `unknown`, the notice). None for discarded turns. */
  reply: Obligation | undefined;
  /** Token usage of the final answer (zeros when none was reported). */
  usage: TurnUsage;
}

export interface WaiterOptions {
  db: Db;
  hub: ChannelHub;
  poller: StatusPoller;
  /** HERMES_QUEUE_PREFIX: namespaces the channels. */
  prefix: string;
  log: Logger;
}

export interface UntilDoneOptions {
  signal: AbortSignal;
  onDelta?: (text: string) => void;
  /** A command of the turn waits for /approve or /deny, or its approval ended (pub/sub: a latency aid). */
  onApproval?: (approval: ApprovalEvent) => void;
  /** A clarify question of the turn waits for the user's next message, or its wait ended (pub/sub: a latency aid). */
  onClarify?: (clarify: ClarifyEvent) => void;
  /** Called with the first state read and on each change. */
  onState?: (admission: AdmissionProgress) => void;
}

export type ApprovalEvent = Extract<TurnEvent, { type: 'approval' }>['approval'];
export type ClarifyEvent = Extract<TurnEvent, { type: 'clarify' }>['clarify'];

export const isSettled = (a: Pick<AdmissionProgress, 'state'>) => a.state === 'terminal' || a.state === 'unknown';

/** Resolves on `fire()` (also one that came before), or rejects with the signal's reason when it aborts. */
class Wakeup {
  private fired = false;
  private wakeNow: (() => void) | undefined;

  fire(): void {
    this.fired = true;
    this.wakeNow?.();
  }

  wait(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.fired) {
      this.fired = false;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const finish = (err?: unknown) => {
        signal.removeEventListener('abort', onAbort);
        this.wakeNow = undefined;
        this.fired = false;
        if (err === undefined) resolve();
        else reject(err as Error);
      };
      const onAbort = () => finish(signal.reason ?? new Error('aborted'));
      this.wakeNow = () => finish();
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

export class AdmissionFollower {
  private subscription: Subscription | undefined;
  private buffered: string[] = [];
  private onDelta: ((text: string) => void) | undefined;
  private onApproval: ((approval: ApprovalEvent) => void) | undefined;
  private onClarify: ((clarify: ClarifyEvent) => void) | undefined;
  private following = false;
  private changedEarly = false;
  private complete = true;
  private firstRead: AdmissionStatus | undefined;
  /** The followed turn's end as its "changed" event brought it (events.ts), until untilDone takes it. */
  private ended: FollowedProgress | undefined;
  private onEnded: (() => void) | undefined;
  private startedFrom: AdmissionProgress | undefined;
  /** The admission whose turn is followed now: `admissionId`, or the resume that continues it. */
  private followed: string;

  constructor(private readonly opts: WaiterOptions, readonly admissionId: string) {
    this.followed = admissionId;
  }

  /** The admission as read right after subscribing (not for a `fresh` follow). */
  get first(): AdmissionStatus {
    if (!this.firstRead) throw new Error('AdmissionFollower.open() has not read the admission');
    return this.firstRead;
  }

  /**
   * True while every delta of the turn has reached us: we subscribed before the turn started and
   * the connection has not dropped since. Otherwise deltas are a partial view of the text.
   */
  get deltasComplete(): boolean {
    return this.complete;
  }

  /** Subscribes to `id`'s channel; without `confirmed`, goes on before Redis acknowledged it (deltas may be partial). */
  private async subscribe(id: string, confirmed = true): Promise<void> {
    this.subscription?.unsubscribe();
    const subscribing = this.opts.hub.subscribe(admissionChannel(this.opts.prefix, id), {
      message: (raw) => this.onMessage(raw, id),
      gap: () => {
        this.complete = false;
        this.changed();
      },
    });
    if (!confirmed) {
      this.complete = false;
      this.subscription = { confirmed: false, unsubscribe: () => { void subscribing.then((s) => s.unsubscribe()); } };
      void subscribing.then((s) => { if (this.subscription?.confirmed === false) this.subscription = s; });
      return;
    }
    this.subscription = await subscribing;
    if (!this.subscription.confirmed) this.complete = false;
  }

  /**
   * Subscribes, then reads the admission. `fresh`: the caller just admitted it into a session of
   * its own (nothing else can have run it, and its job is added after this), so it is `queued`
   * without a read. `deltas: false`: the caller needs only the end (a non-streamed completion), so
   * the subscription (a latency aid then) is not waited for.
   */
  async open(fresh = false, deltas = true): Promise<void> {
    await this.subscribe(this.admissionId, deltas);
    if (fresh) {
      this.startedFrom = { id: this.admissionId, state: 'queued', outcome: null };
      return;
    }
    const admission = await getAdmissionStatus(this.opts.db.pool, this.admissionId);
    if (!admission) throw new HermesError('HERMES_ADMISSION_NOT_FOUND', `There is no admission ${this.admissionId}.`);
    if (admission.state !== 'queued') this.complete = false; // joined late: earlier deltas are gone
    this.firstRead = admission;
    this.startedFrom = admission;
  }

  private changed(): void {
    if (this.following) this.opts.poller.poke(this.followed);
    else this.changedEarly = true;
  }

  /** The turn waits for a person (an approval, a clarify question), or that wait ended. */
  private onHumanWait(event: Extract<TurnEvent, { type: 'approval' | 'clarify' }>): void {
    if (event.type === 'approval') this.onApproval?.(event.approval);
    else this.onClarify?.(event.clarify);
  }

  private onMessage(raw: string, channelOf: string): void {
    const event = parseTurnEvent(raw);
    if (event?.type === 'delta') {
      if (this.onDelta) this.onDelta(event.text);
      else this.buffered.push(event.text);
    } else if (event?.type === 'approval' || event?.type === 'clarify') {
      this.onHumanWait(event);
    } else if (event?.type === 'changed' && event.end && channelOf === this.followed) {
      // Published after the commit that ended the turn, with what it wrote: no read needed.
      const { outcome, reply, usage } = event.end;
      this.ended = {
        id: channelOf, state: 'terminal', outcome,
        end: { reply: { ...reply, admissionId: channelOf, callKey: '', attempts: 0, possibleDuplicate: false, piecesSent: 0, createdAt: new Date() }, usage },
      };
      this.onEnded?.();
    } else if (event) {
      this.changed();
    }
  }

  /** Follows the turn until it is `terminal` or `unknown`; rejects with the signal's reason on abort. */
  async untilDone(o: UntilDoneOptions): Promise<TurnEnd> {
    if (o.signal.aborted) throw o.signal.reason as Error;
    this.onDelta = o.onDelta;
    this.onApproval = o.onApproval;
    this.onClarify = o.onClarify;
    for (const text of this.buffered.splice(0)) o.onDelta?.(text);
    if (!this.startedFrom) throw new Error('AdmissionFollower.open() has not completed');
    let current: FollowedProgress = this.startedFrom;
    let missing = false;
    const wakeup = new Wakeup();
    const watch = (id: string) => this.opts.poller.watch(id, (progress) => {
      if (progress === 'missing') missing = true;
      // A poll sent before the turn ended may answer after its end arrived by pub/sub: keep the end.
      else if (!isSettled(current) || isSettled(progress)) current = progress;
      wakeup.fire();
    });
    let unwatch = watch(this.followed);
    this.following = true;
    // An end brought by pub/sub wins over a poll of the same admission (both say what Postgres holds).
    const takeEnd = () => {
      if (this.ended?.id !== this.followed) return;
      current = this.ended;
      this.ended = undefined;
      wakeup.fire();
    };
    this.onEnded = takeEnd;
    takeEnd();
    if (this.changedEarly) this.opts.poller.poke(this.followed);
    let reported: string | undefined;
    try {
      for (;;) {
        if (missing) throw new HermesError('HERMES_ADMISSION_NOT_FOUND', `Admission ${this.followed} no longer exists.`);
        if (current.state !== reported) {
          reported = current.state;
          o.onState?.(current);
        }
        if (isSettled(current)) {
          const next = current.outcome === 'interrupted' ? await continuationOf(this.opts.db.pool, this.followed) : undefined;
          if (!next) return { admission: current, ...(current.end ?? (await readTurnEnd(this.opts.db.pool, this.followed))) };
          unwatch();
          ({ current, unwatch } = await this.moveTo(next, watch));
          continue;
        }
        await wakeup.wait(o.signal);
      }
    } finally {
      unwatch();
      this.onEnded = undefined;
      this.following = false;
      this.onDelta = undefined;
      this.onApproval = undefined;
      this.onClarify = undefined;
    }
  }

  /** Follows the resume `next` from now on: its channel, then its progress (read after subscribing). */
  private async moveTo(next: string, watch: (id: string) => () => void): Promise<{ current: FollowedProgress; unwatch: () => void }> {
    this.followed = next;
    await this.subscribe(next);
    const unwatch = watch(next);
    const status = await getAdmissionStatus(this.opts.db.pool, next);
    return { current: status ?? { id: next, state: 'queued', outcome: null }, unwatch };
  }

  close(): void {
    this.onDelta = undefined;
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }
}

export class TurnWaiter {
  constructor(private readonly opts: WaiterOptions) {}

  /** Subscribes to the admission's events, then reads it (unless `fresh`, see open()). Close the follower when done. */
  async follow(admissionId: string, opts: { fresh?: boolean; deltas?: boolean } = {}): Promise<AdmissionFollower> {
    const follower = new AdmissionFollower(this.opts, admissionId);
    try {
      await follower.open(opts.fresh, opts.deltas);
      return follower;
    } catch (err) {
      follower.close();
      throw err;
    }
  }
}
