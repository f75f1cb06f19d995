// One Postgres poll per gateway process for every admission being followed: every `pollMs`, one
// statement reads state and outcome (nothing else) of all watched admissions, however many
// requests follow each. A "changed" ping from pub/sub asks for an early read of that admission;
// pings arriving together share one statement. While Postgres is unreachable the poll is
// retried on the next tick (logged once per outage); the poll stops when nothing is watched.
import { getAdmissionProgress, isStoreUnavailable, type FollowedProgress, type Db, type Logger, type Metrics } from '../core/index.js';

export type ProgressListener = (progress: FollowedProgress | 'missing') => void;

export interface StatusPollerOptions {
  db: Db;
  log: Logger;
  /** hermes_gateway_followed_admissions and hermes_gateway_admission_polls_total. */
  metrics?: Pick<Metrics, 'followedAdmissions' | 'admissionPolls'>;
  /** @defaultValue 500 */
  pollMs?: number;
}

export class StatusPoller {
  private readonly watched = new Map<string, Set<ProgressListener>>();
  private readonly poked = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private pokeScheduled = false;
  private outage = false;

  constructor(private readonly opts: StatusPollerOptions) {}

  /** Hears every poll of `admissionId` until the returned function is called. */
  watch(admissionId: string, listener: ProgressListener): () => void {
    let set = this.watched.get(admissionId);
    if (!set) {
      this.watched.set(admissionId, (set = new Set()));
      this.opts.metrics?.followedAdmissions.inc();
    }
    set.add(listener);
    this.arm();
    return () => {
      const current = this.watched.get(admissionId);
      if (!current?.delete(listener) || current.size > 0) return;
      this.watched.delete(admissionId);
      this.opts.metrics?.followedAdmissions.dec();
      this.poked.delete(admissionId);
      if (this.watched.size === 0) this.disarm();
    };
  }

  /** Reads `admissionId` soon (its turn announced a change). */
  poke(admissionId: string): void {
    if (!this.watched.has(admissionId)) return;
    this.poked.add(admissionId);
    if (this.pokeScheduled) return;
    this.pokeScheduled = true;
    setImmediate(() => {
      this.pokeScheduled = false;
      const ids = [...this.poked];
      this.poked.clear();
      void this.read(ids);
    });
  }

  /** Admissions watched now (for tests and metrics). */
  get size(): number {
    return this.watched.size;
  }

  close(): void {
    this.opts.metrics?.followedAdmissions.dec(this.watched.size);
    this.watched.clear();
    this.poked.clear();
    this.disarm();
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.read([...this.watched.keys()]).finally(() => { if (this.watched.size > 0) this.arm(); });
    }, this.opts.pollMs ?? 500);
    this.timer.unref();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async read(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    let rows: FollowedProgress[];
    try {
      this.opts.metrics?.admissionPolls.inc();
      rows = await getAdmissionProgress(this.opts.db.pool, ids);
    } catch (err) {
      if (!this.outage) this.opts.log.warn({ err, admissions: ids.length }, isStoreUnavailable(err) ? 'Could not poll followed admissions (Postgres unavailable); retrying' : 'Polling followed admissions failed; retrying');
      this.outage = true;
      return;
    }
    if (this.outage) this.opts.log.info({ admissions: ids.length }, 'Polling followed admissions again');
    this.outage = false;
    const found = new Map(rows.map((r) => [r.id, r]));
    for (const id of ids) {
      const progress = found.get(id) ?? 'missing';
      for (const listener of [...(this.watched.get(id) ?? [])]) listener(progress);
    }
  }
}
