import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admissionIdAnnotation, lastUsedAtAnnotation, ttlSecondsAnnotation } from '../../../operator/api/sandbox-labels.js';
import { admissionIdOf, finishedAt, resolveHygieneOptions, sandboxPodVerdict, ttlSecondsOf, workspaceVerdict } from '../../../operator/controllers/sandbox-policy.js';

const t0 = Date.parse('2030-01-01T00:00:00Z');
const opts = resolveHygieneOptions({ finishedGraceMs: 60_000, unannotatedGraceMs: 300_000, workspaceTtlSeconds: 3600 });
const id = '0b6f3a52-6c1e-4d0e-9d6a-3f1f3c2b1a00';

function pod(o: { admission?: string; phase?: string; created?: string | Date; finished?: string } = {}): V1Pod {
  return {
    metadata: { name: 'p', namespace: 'n', creationTimestamp: (o.created ?? new Date(t0)) as Date, annotations: o.admission === undefined ? {} : { [admissionIdAnnotation]: o.admission } },
    status: { phase: o.phase ?? 'Pending', ...(o.finished ? { containerStatuses: [{ name: 'c', image: 'x', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 0, finishedAt: o.finished as unknown as Date } } }] } : {}) },
  };
}

function pvc(annotations: Record<string, string>, created = '2030-01-01T00:00:00Z'): V1PersistentVolumeClaim {
  return { metadata: { name: 'w', namespace: 'n', creationTimestamp: created as unknown as Date, annotations } };
}

describe('sandbox Pod verdicts', () => {
  it('reads the admission id only when it is a UUID', () => {
    expect(admissionIdOf(pod({ admission: id.toUpperCase() }))).toBe(id);
    expect(admissionIdOf(pod({ admission: 'not-a-uuid' }))).toBeUndefined();
    expect(admissionIdOf(pod())).toBeUndefined();
  });

  it('never deletes a Pod of a queued or started turn, even finished long ago', () => {
    for (const turn of ['queued', 'started'] as const) {
      expect(sandboxPodVerdict(pod({ admission: id, phase: 'Succeeded' }), turn, t0 + 86_400_000, opts)).toEqual({ action: 'keep' });
    }
  });

  it('deletes a Pod whose turn is terminal, unknown or missing, at once', () => {
    expect(sandboxPodVerdict(pod({ admission: id }), 'terminal', t0, opts)).toMatchObject({ action: 'delete', reason: 'TurnOver' });
    expect(sandboxPodVerdict(pod({ admission: id }), 'unknown', t0, opts)).toMatchObject({ action: 'delete', reason: 'TurnUnknown' });
    expect(sandboxPodVerdict(pod({ admission: id }), 'missing', t0, opts)).toMatchObject({ action: 'delete', reason: 'TurnNotFound' });
  });

  it('deletes a Pod without an admission once finished past the grace, or once older than the unannotated grace', () => {
    const finished = pod({ phase: 'Failed', created: '2030-01-01T00:09:00Z', finished: '2030-01-01T00:10:00Z' });
    expect(finishedAt(finished)).toBe(t0 + 600_000);
    expect(sandboxPodVerdict(finished, undefined, t0 + 600_000 + 59_000, opts)).toEqual({ action: 'keep', recheckAfterMs: 1_000 });
    expect(sandboxPodVerdict(finished, undefined, t0 + 660_000, opts)).toMatchObject({ action: 'delete', reason: 'Finished' });
    expect(sandboxPodVerdict(pod({ admission: 'garbage' }), undefined, t0 + 100_000, opts)).toEqual({ action: 'keep', recheckAfterMs: 200_000 });
    expect(sandboxPodVerdict(pod({ created: '2030-01-01T00:00:00Z' }), undefined, t0 + 300_000, opts)).toMatchObject({ action: 'delete', reason: 'NoTurn' });
  });
});

describe('workspace PVC verdicts', () => {
  it('uses the TTL annotation when it is an integer, else the default', () => {
    expect(ttlSecondsOf(pvc({ [ttlSecondsAnnotation]: '120' }), 3600)).toBe(120);
    expect(ttlSecondsOf(pvc({ [ttlSecondsAnnotation]: '2h' }), 3600)).toBe(3600);
    expect(ttlSecondsOf(pvc({}), 3600)).toBe(3600);
  });

  it('measures idleness from last-used-at, else creation; keeps it while a live Pod mounts it', () => {
    const used = pvc({ [lastUsedAtAnnotation]: '2030-01-01T01:00:00Z' });
    expect(workspaceVerdict(used, [], t0 + 3_600_000 + 1_000, opts)).toEqual({ action: 'keep', recheckAfterMs: 3_599_000 });
    expect(workspaceVerdict(used, [], t0 + 7_200_000, opts)).toMatchObject({ action: 'delete', reason: 'WorkspaceExpired' });
    expect(workspaceVerdict(used, ['n/p'], t0 + 86_400_000, opts)).toEqual({ action: 'keep' });
    expect(workspaceVerdict(pvc({ [lastUsedAtAnnotation]: 'yesterday' }), [], t0 + 3_600_000, opts)).toMatchObject({ action: 'delete' });
    expect(workspaceVerdict(pvc({}), [], t0 + 3_599_000, opts)).toEqual({ action: 'keep', recheckAfterMs: 1_000 });
  });
});
