// Leader election on a coordination.k8s.io/v1 Lease, written on the Lease API the way client-go's
// leaderelection does it: the holder renews `renewTime` every retry period; a candidate takes the
// Lease over only when the record it last observed has not changed for `leaseDurationSeconds`
// (measured on its own clock, so clock skew between replicas does not matter); every write is
// guarded by resourceVersion, so two candidates never both win; a leader that cannot renew within
// the renew deadline stops leading; a clean stop releases the Lease so a successor starts at once.
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../../services/core/index.js';
import { kubeErrorLine } from '../../services/sandbox/index.js';

/** Options for {@link LeaderElector}. */
export interface LeaderElectionOptions {
  kc: KubeConfig;
  namespace: string;
  /** Lease name. */
  name: string;
  /** This replica's identity (pod name + random suffix). */
  identity: string;
  /** @defaultValue 15 */
  leaseDurationSeconds?: number;
  /** How long a leader keeps trying to renew before it gives up leading. @defaultValue 10_000 ms */
  renewDeadlineMs?: number;
  /** Time between attempts. @defaultValue 2_000 ms */
  retryPeriodMs?: number;
  onStartedLeading: () => void;
  /** Called when leadership is lost or released; the process should stop its controllers. */
  onStoppedLeading: () => void;
  log: Logger;
}

const statusOf = (err: unknown): number | undefined => (err as { code?: number }).code;

export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** The attempt in flight (never rejects); stop() waits for it so a late renew cannot overwrite the release. */
  private inflight: Promise<void> | undefined;
  private observed: { record: string; at: number } | undefined;
  private lastRenew = 0;
  private otherHolds = false;
  private readonly duration: number;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.api = opts.kc.makeApiClient(CoordinationV1Api);
    this.duration = opts.leaseDurationSeconds ?? 15;
  }

  isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.inflight = this.tick();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const ok = await this.tryAcquireOrRenew().catch((err: unknown) => {
      this.opts.log.debug({ err: kubeErrorLine(err), lease: this.opts.name }, 'Lease attempt failed');
      return false;
    });
    if (ok) this.lastRenew = Date.now();
    this.transition(ok);
    if (!this.stopped) {
      this.timer = setTimeout(() => { this.inflight = this.tick(); }, this.opts.retryPeriodMs ?? 2_000);
      this.timer.unref();
    }
  }

  private transition(ok: boolean): void {
    if (ok && !this.leading) {
      this.leading = true;
      this.opts.log.info({ lease: this.opts.name, identity: this.opts.identity }, 'Acquired leader Lease');
      this.opts.onStartedLeading();
    } else if (!ok && this.leading && (this.otherHolds || Date.now() - this.lastRenew > (this.opts.renewDeadlineMs ?? 10_000))) {
      this.leading = false;
      this.opts.log.warn({ lease: this.opts.name, identity: this.opts.identity }, 'Lost leader Lease: could not renew in time');
      this.opts.onStoppedLeading();
    }
  }

  /** One attempt; true when this replica holds the Lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name } = this.opts;
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      await this.api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: this.spec(0, new V1MicroTime()) } });
      return true;
    }
    const next = this.takeover(lease.spec ?? {});
    if (!next) return false;
    await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: next } });
    return true;
  }

  /** When the Lease record last changed, on this replica's clock. */
  private observe(spec: NonNullable<V1Lease['spec']>): number {
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseTransitions]);
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    return this.observed.at;
  }

  /** The spec to write when this replica may hold the Lease, else undefined. */
  private takeover(spec: NonNullable<V1Lease['spec']>): V1Lease['spec'] | undefined {
    const observedAt = this.observe(spec);
    const holder = spec.holderIdentity ?? '';
    const mine = holder === this.opts.identity;
    const expired = Date.now() - observedAt > (spec.leaseDurationSeconds ?? this.duration) * 1000;
    this.otherHolds = !mine && holder !== '' && !expired;
    if (this.otherHolds) return undefined;
    const transitions = (spec.leaseTransitions ?? 0) + (mine ? 0 : 1);
    return this.spec(transitions, mine ? (spec.acquireTime ?? new V1MicroTime()) : new V1MicroTime());
  }

  private spec(transitions: number, acquireTime: Date): V1Lease['spec'] {
    return { holderIdentity: this.opts.identity, leaseDurationSeconds: this.duration, acquireTime, renewTime: new V1MicroTime(), leaseTransitions: transitions };
  }

  /**
   * Stops campaigning; a leader releases the Lease (empty holder) so another replica takes over at
   * once. `release: false` leaves it to expire, as a crashed process would.
   */
  async stop({ release = true }: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inflight;
    if (!this.leading) return;
    this.leading = false;
    if (!release) return this.opts.onStoppedLeading();
    try {
      const lease = await this.api.readNamespacedLease({ name: this.opts.name, namespace: this.opts.namespace });
      if (lease.spec?.holderIdentity === this.opts.identity) {
        await this.api.replaceNamespacedLease({ name: this.opts.name, namespace: this.opts.namespace,
          body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new V1MicroTime() } } });
      }
    } catch (err) {
      this.opts.log.warn({ err: kubeErrorLine(err), lease: this.opts.name }, 'Could not release leader Lease');
    }
    this.opts.onStoppedLeading();
  }
}
