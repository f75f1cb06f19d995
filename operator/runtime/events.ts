// Kubernetes Events about our objects (what `kubectl describe` shows). An Event identical to the
// last one for the same object is not written again, so a reconcile of unchanged state writes
// nothing.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../services/core/index.js';
import { kubeErrorLine } from '../../services/sandbox/index.js';

export interface EventTarget {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export class EventRecorder {
  private readonly api: CoreV1Api;
  private readonly last = new Map<string, string>();

  constructor(kc: KubeConfig, private readonly component: string, private readonly instance: string, private readonly log: Logger) {
    this.api = kc.makeApiClient(CoreV1Api);
  }

  /** Records an Event (type Normal or Warning); failures are logged, never thrown. */
  async emit(obj: EventTarget, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const ns = obj.metadata.namespace ?? 'default';
    const id = obj.metadata.uid ?? `${ns}/${obj.metadata.name}`;
    const fingerprint = `${type}|${reason}|${message}`;
    if (this.last.get(id) === fingerprint) return;
    this.last.set(id, fingerprint);
    const now = new Date();
    try {
      await this.api.createNamespacedEvent({ namespace: ns, body: {
        metadata: { name: `${obj.metadata.name}.${randomBytes(6).toString('hex')}`, namespace: ns },
        involvedObject: { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name, namespace: ns, uid: obj.metadata.uid, resourceVersion: obj.metadata.resourceVersion },
        type, reason, message: message.slice(0, 1024), count: 1, firstTimestamp: now, lastTimestamp: now,
        source: { component: this.component }, reportingComponent: this.component, reportingInstance: this.instance,
      } });
    } catch (err) {
      this.last.delete(id);
      this.log.warn({ err: kubeErrorLine(err), object: `${obj.kind} ${ns}/${obj.metadata.name}`, reason }, 'Could not record Event');
    }
  }

  /** Forgets an object (after it was deleted). */
  forget(uid: string | undefined): void {
    if (uid) this.last.delete(uid);
  }
}
