// Sandbox hygiene against a real kube-apiserver and Postgres: sandbox Pods whose turn is over
// (admission terminal, unknown or missing) are deleted, Pods of queued and started turns survive
// (even finished ones), strays without an admission are deleted once finished; workspace PVCs
// past their TTL are deleted unless a live sandbox Pod mounts them, and are deleted once it goes.
// No kubelet: Pods stay Pending (phases are set through the status subresource).
import { randomUUID } from 'node:crypto';
import { CoreV1Api, type V1PersistentVolumeClaim, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acquireLease, admit, finishTurn, publishRevision, registerInstance, sha256, startNextTurn, type Lease,
} from '../../../services/core/index.js';
import {
  admissionIdAnnotation, agentKey, componentLabel, lastUsedAtAnnotation, sandboxComponent, ttlSecondsAnnotation, workspaceComponent,
} from '../../../operator/api/sandbox-labels.js';
import type { OperatorHandle } from '../../../operator/manager.js';
import { waitFor } from '../../support/kube/index.js';
import { eventsFor, startPlane, type Plane } from './harness.js';

describe('sandbox hygiene', () => {
  let plane: Plane;
  let op: OperatorHandle;
  let ns: string;
  let core: CoreV1Api;
  let agentId: string;
  let workerId: string;

  beforeAll(async () => {
    plane = await startPlane();
    ns = await plane.cp.createNamespace('sandbox');
    core = plane.cp.kubeConfig().makeApiClient(CoreV1Api);
    agentId = (await publishRevision(plane.db, {
      apiVersion: 'hermes.dev/v1alpha1', agent: { namespace: ns, name: 'coder' }, profile: { namespace: ns, name: 'p' },
      model: { provider: 'openai', model: 'm', baseURL: 'http://127.0.0.1:1/v1', apiKeyRef: { name: 'k', key: 'K' } },
      persona: 'test', api: { enabled: true, keySha256: [sha256('k')] }, busyPolicy: 'queue',
    })).agentId;
    workerId = (await registerInstance(plane.db.pool, 'worker')).id;
    // A long unannotated grace: a stray running Pod survives, a finished one goes at once.
    op = await plane.start({ namespace: ns, sandbox: { resyncMs: 200, finishedGraceMs: 0, unannotatedGraceMs: 3_600_000 } });
  });
  afterAll(async () => { await plane?.stop(); });

  /** An admission in `state`, each in its own session; the lease of a started one is returned to finish it later. */
  async function admission(state: 'queued' | 'started' | 'terminal' | 'unknown'): Promise<{ id: string; lease?: Lease }> {
    const a = await admit(plane.db, { agentId, platform: 'api', sessionKey: `sandbox-${randomUUID()}`, user: { platformUserId: 'u' }, content: 'run ls' });
    if (state === 'queued') return { id: a.admissionId };
    const lease = (await acquireLease(plane.db.pool, a.sessionId, workerId, 300, { instanceTtlSeconds: 60, steady: true }))!;
    expect((await startNextTurn(plane.db, lease))?.id).toBe(a.admissionId);
    if (state === 'terminal') await finishTurn(plane.db, lease, a.admissionId, { outcome: 'completed', reply: 'done' });
    // started → unknown is what the sweeper does when the owner died mid-turn.
    if (state === 'unknown') await plane.db.pool.query(`UPDATE admissions SET state = 'unknown', error = 'owner stopped mid-turn' WHERE id = $1`, [a.admissionId]);
    return { id: a.admissionId, lease };
  }

  async function sandboxPod(name: string, admissionId: string | undefined, claim?: string): Promise<void> {
    const body: V1Pod = {
      metadata: { name, labels: { [componentLabel]: sandboxComponent, [agentKey]: 'coder' },
        annotations: { [agentKey]: 'coder', ...(admissionId ? { [admissionIdAnnotation]: admissionId } : {}) } },
      spec: {
        automountServiceAccountToken: false, restartPolicy: 'Never', activeDeadlineSeconds: 600,
        containers: [{ name: 'exec', image: 'sandbox:test', command: ['sh', '-c', 'ls'], ...(claim ? { volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }] } : {}) }],
        ...(claim ? { volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: claim } }] } : {}),
      },
    };
    await core.createNamespacedPod({ namespace: ns, body });
  }

  async function workspace(name: string, annotations: Record<string, string>): Promise<void> {
    const body: V1PersistentVolumeClaim = {
      metadata: { name, labels: { [componentLabel]: workspaceComponent, [agentKey]: 'coder' }, annotations: { [agentKey]: 'coder', ...annotations } },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    };
    await core.createNamespacedPersistentVolumeClaim({ namespace: ns, body });
  }

  async function finish(name: string, phase: 'Succeeded' | 'Failed'): Promise<void> {
    const pod = await core.readNamespacedPod({ namespace: ns, name });
    await core.replaceNamespacedPodStatus({ namespace: ns, name, body: { ...pod, status: { ...pod.status, phase } } });
  }

  const podExists = async (name: string) => (await core.listNamespacedPod({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items.length > 0;
  /** Deletion requested: gone, or (no controller-manager removes kubernetes.io/pvc-protection here) marked for deletion. */
  const pvcDeleted = async (name: string) => {
    const c = (await core.listNamespacedPersistentVolumeClaim({ namespace: ns, fieldSelector: `metadata.name=${name}` })).items[0];
    return !c || !!c.metadata?.deletionTimestamp;
  };
  /** Two full resync passes of both controllers after this call: whatever survives them was looked at and kept. */
  async function twoPasses(): Promise<void> {
    const start = op.reconciles();
    const pods = (await core.listNamespacedPod({ namespace: ns })).items.length;
    const pvcs = (await core.listNamespacedPersistentVolumeClaim({ namespace: ns })).items.length;
    await waitFor(() => {
      const now = op.reconciles();
      return (now['sandbox-pod'] ?? 0) - (start['sandbox-pod'] ?? 0) >= 2 * pods && (now.workspace ?? 0) - (start.workspace ?? 0) >= 2 * pvcs;
    }, { what: 'two resync passes of the sandbox hygiene controllers' });
  }

  it('deletes Pods of terminal, unknown and missing turns and finished strays; keeps Pods of queued and started turns', async () => {
    const [terminal, unknown, queued, started, startedDone] = await Promise.all(
      (['terminal', 'unknown', 'queued', 'started', 'started'] as const).map((s) => admission(s)));
    await sandboxPod('pod-terminal', terminal!.id);
    await sandboxPod('pod-unknown', unknown!.id);
    await sandboxPod('pod-missing', randomUUID());
    await sandboxPod('pod-queued', queued!.id);
    await sandboxPod('pod-started', started!.id);
    await sandboxPod('pod-started-finished', startedDone!.id);
    await finish('pod-started-finished', 'Succeeded'); // its turn goes on: never deleted while started
    await sandboxPod('pod-stray-running', undefined);
    await sandboxPod('pod-stray-finished', undefined);
    await finish('pod-stray-finished', 'Failed');
    // Not a sandbox Pod: never looked at.
    await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'other', annotations: { [admissionIdAnnotation]: terminal!.id } },
      spec: { containers: [{ name: 'c', image: 'x' }] } } });

    for (const name of ['pod-terminal', 'pod-unknown', 'pod-missing', 'pod-stray-finished']) {
      await waitFor(async () => !(await podExists(name)), { what: `sandbox Pod ${name} to be deleted` });
    }
    await twoPasses();
    for (const name of ['pod-queued', 'pod-started', 'pod-started-finished', 'pod-stray-running', 'other']) expect(await podExists(name), name).toBe(true);

    const events = await eventsFor(plane.cp.kubeConfig(), ns, 'pod-terminal');
    expect(events).toContainEqual(expect.objectContaining({ type: 'Normal', reason: 'TurnOver', message: expect.stringContaining(terminal!.id) }));
    expect(await eventsFor(plane.cp.kubeConfig(), ns, 'pod-missing')).toContainEqual(expect.objectContaining({ reason: 'TurnNotFound' }));
    expect(await eventsFor(plane.cp.kubeConfig(), ns, 'pod-unknown')).toContainEqual(expect.objectContaining({ reason: 'TurnUnknown' }));

    // The started turn ends: its Pods go on the next look.
    await finishTurn(plane.db, started!.lease!, started!.id, { outcome: 'completed', reply: 'ok' });
    await finishTurn(plane.db, startedDone!.lease!, startedDone!.id, { outcome: 'failed', reply: 'no', error: 'x' });
    await waitFor(async () => !(await podExists('pod-started')) && !(await podExists('pod-started-finished')), { what: 'the Pods of the finished turns to be deleted' });
    expect(await podExists('pod-queued')).toBe(true);
  });

  it('deletes workspace PVCs past their TTL unless a live sandbox Pod mounts them', async () => {
    const longAgo = '2020-01-01T00:00:00Z';
    const turn = await admission('started');
    await workspace('ws-expired', { [ttlSecondsAnnotation]: '60', [lastUsedAtAnnotation]: longAgo });
    await workspace('ws-default-ttl-expired', { [lastUsedAtAnnotation]: longAgo }); // default TTL: 7 days
    await workspace('ws-fresh', { [lastUsedAtAnnotation]: new Date().toISOString() });
    await workspace('ws-new', {}); // measured from creation
    // The Pod first (the operator must have seen it): an expired PVC nothing mounts yet would go at once.
    await sandboxPod('pod-mounting', turn.id, 'ws-mounted');
    await waitFor(() => !!op.caches.sandbox?.pods.get('pod-mounting', ns), { what: 'the operator to see the mounting Pod' });
    await workspace('ws-mounted', { [ttlSecondsAnnotation]: '1', [lastUsedAtAnnotation]: longAgo });

    for (const name of ['ws-expired', 'ws-default-ttl-expired']) await waitFor(() => pvcDeleted(name), { what: `workspace PVC ${name} to be deleted` });
    expect(await eventsFor(plane.cp.kubeConfig(), ns, 'ws-expired')).toContainEqual(expect.objectContaining({ reason: 'WorkspaceExpired' }));
    await twoPasses();
    for (const name of ['ws-fresh', 'ws-new', 'ws-mounted']) expect(await pvcDeleted(name), name).toBe(false);

    // The turn ends → its Pod is deleted → nothing mounts the expired workspace any more.
    await finishTurn(plane.db, turn.lease!, turn.id, { outcome: 'completed', reply: 'ok' });
    await waitFor(async () => !(await podExists('pod-mounting')), { what: 'the mounting Pod to be deleted' });
    await waitFor(() => pvcDeleted('ws-mounted'), { what: 'the no-longer-mounted expired workspace to be deleted' });
    expect(await pvcDeleted('ws-fresh')).toBe(false);
  });
});
