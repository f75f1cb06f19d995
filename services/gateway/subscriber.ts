// One Redis subscriber connection per gateway process, multiplexing every admission channel a
// waiter follows (ref-counted: SUBSCRIBE on the first listener, UNSUBSCRIBE after the last).
// Pub/sub is only a latency aid (core events.ts): when the connection drops, listeners hear
// `gap()` so they stop trusting the delta stream, and they keep polling Postgres.
import type { Redis } from 'ioredis';
import type { Logger } from '../core/index.js';

export interface ChannelListener {
  message(raw: string): void;
  /** The connection dropped while subscribed: messages may have been lost. */
  gap(): void;
}

export interface Subscription {
  /** False when SUBSCRIBE was not confirmed in time: expect no messages, rely on polling. */
  confirmed: boolean;
  unsubscribe(): void;
}

export class ChannelHub {
  private readonly listeners = new Map<string, Set<ChannelListener>>();
  /** Outcome of each channel's SUBSCRIBE, shared by every listener of the channel. */
  private readonly subscribed = new Map<string, Promise<boolean>>();
  private closed = false;
  private readonly onMessage = (channel: string, raw: string) => {
    for (const l of this.listeners.get(channel) ?? []) l.message(raw);
  };
  private readonly onClose = () => {
    for (const set of this.listeners.values()) for (const l of set) l.gap();
  };

  /**
   * @param redis a connection used for nothing else (it enters subscriber mode); the caller owns it.
   * @param confirmMs how long to wait for SUBSCRIBE before going on without it. @defaultValue 1000
   */
  constructor(private readonly redis: Redis, private readonly log: Logger, private readonly confirmMs = 1_000) {
    redis.on('message', this.onMessage);
    redis.on('close', this.onClose);
  }

  async subscribe(channel: string, listener: ChannelListener): Promise<Subscription> {
    if (this.closed) return { confirmed: false, unsubscribe: () => undefined };
    let set = this.listeners.get(channel);
    if (!set) {
      this.listeners.set(channel, (set = new Set()));
      this.subscribed.set(channel, this.command(() => this.redis.subscribe(channel), 'subscribe', channel));
    }
    set.add(listener);
    // Later listeners ride on the first one's SUBSCRIBE (commands on one connection run in order).
    const confirmed = await (this.subscribed.get(channel) ?? Promise.resolve(false));
    return { confirmed, unsubscribe: () => this.remove(channel, listener) };
  }

  private remove(channel: string, listener: ChannelListener): void {
    const set = this.listeners.get(channel);
    if (!set?.delete(listener) || set.size > 0) return;
    this.listeners.delete(channel);
    this.subscribed.delete(channel);
    void this.command(() => this.redis.unsubscribe(channel), 'unsubscribe', channel);
  }

  private async command(run: () => Promise<unknown>, what: string, channel: string): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), this.confirmMs); });
    const done = run().then(() => true, (err: unknown) => {
      this.log.warn({ err, channel }, `Redis ${what} failed; turn events fall back to polling Postgres`);
      return false;
    });
    try {
      return await Promise.race([done, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Number of channels with listeners (for tests and metrics). */
  get size(): number {
    return this.listeners.size;
  }

  /** Drops every listener and subscription; the connection itself stays the caller's. */
  async close(): Promise<void> {
    this.closed = true;
    const channels = [...this.listeners.keys()];
    this.listeners.clear();
    this.subscribed.clear();
    this.redis.off('message', this.onMessage);
    this.redis.off('close', this.onClose);
    if (channels.length) await this.command(() => this.redis.unsubscribe(...channels), 'unsubscribe', channels.join(','));
  }
}
