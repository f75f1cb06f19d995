// Wakes the wait for a session's claim as soon as agent-sandbox changes it: a watch on the one
// SandboxClaim (field selector on its name) from the version the worker last read. agent-sandbox
// mirrors its Sandbox's Ready condition (and pod IPs, deletion) into the claim's status, so the
// claim's events cover a warm adoption, a cold start and a resume alike. A watch the apiserver
// ends or breaks is started again (from the last version seen; after an error from now, backing
// off) and wakes the waiter, whose re-read covers what the break missed; the waiter also re-reads
// on its own every `pollMs` (claims.ts), so a watch that is refused (no `watch` permission, an
// old proxy) costs speed, not correctness.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { AGENT_SANDBOX_VERSION, EXTENSIONS_GROUP, plural } from './resources.js';

interface Versioned { metadata?: { resourceVersion?: string } }

/** client-node's Watch fails a request answered with another status than 200 with `statusCode`. */
const refused = (err: unknown): boolean => typeof (err as { statusCode?: unknown } | null)?.statusCode === 'number';

export class ClaimWatch<T extends Versioned> {
  private changed = false;
  /** The claim as its last event showed it, until a waiter takes it; undefined after a break (re-read it). */
  private latest: T | undefined;
  private wake?: () => void;
  private closed = false;
  private failures = 0;
  private abort?: AbortController;
  private retry?: NodeJS.Timeout;

  constructor(private readonly kc: KubeConfig, private readonly namespace: string, private readonly name: string) {}

  /** Starts watching for changes after `resourceVersion` (the claim as last read). */
  start(resourceVersion: string | undefined): void {
    void this.watch(resourceVersion);
  }

  private async watch(resourceVersion: string | undefined): Promise<void> {
    if (this.closed) return;
    let rv = resourceVersion;
    const query: Record<string, string | boolean> = { fieldSelector: `metadata.name=${this.name}`, allowWatchBookmarks: false };
    if (rv) query.resourceVersion = rv;
    let failed = false;
    const path = `/apis/${EXTENSIONS_GROUP}/${AGENT_SANDBOX_VERSION}/namespaces/${this.namespace}/${plural.claims}`;
    const abort = await new Watch(this.kc).watch(path, query, (type: string, obj: T) => {
      // ERROR carries a Status (410 Gone: the version is too old): start again from now.
      if (type === 'ERROR') { failed = true; return; }
      rv = obj.metadata?.resourceVersion ?? rv;
      this.failures = 0;
      this.signal(type === 'DELETED' ? undefined : obj);
    }, (err: unknown) => {
      if (this.closed) return;
      failed ||= !!err;
      this.failures = failed ? this.failures + 1 : 0;
      // A watch refused outright (an HTTP status: no `watch` permission yet, …) missed nothing: it
      // starts again from the same version, and the waiter's own re-reads cover the meantime. One
      // that ran and broke may have missed a change: look, and start again from now.
      const again = refused(err) || !failed ? rv : undefined;
      if (!refused(err)) this.signal(undefined);
      const delay = failed ? Math.min(50 * 2 ** this.failures, 5_000) : 0;
      this.retry = setTimeout(() => void this.watch(again), delay);
    });
    this.abort = abort;
    if (this.closed) abort.abort();
  }

  private signal(obj: T | undefined): void {
    this.changed = true;
    this.latest = obj;
    this.wake?.();
  }

  /**
   * Resolves at the first change since the last call (at once when one came already), after `ms`,
   * or on abort: with the claim as the watch last saw it, or undefined when the caller must read it
   * (no event, a deletion, or a broken watch).
   */
  next(ms: number, signal: AbortSignal): Promise<T | undefined> {
    return new Promise((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', finish);
        const seen = this.changed ? this.latest : undefined;
        this.wake = undefined;
        this.changed = false;
        this.latest = undefined;
        resolve(seen);
      };
      const timer = setTimeout(finish, ms);
      if (this.changed || signal.aborted) return finish();
      signal.addEventListener('abort', finish, { once: true });
      this.wake = finish;
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.abort?.abort();
    this.wake?.();
  }
}
