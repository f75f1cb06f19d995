// What the sandbox hygiene controller decides, as pure functions of one object, the state of its
// turn and the time (unit-tested without a cluster): keep a sandbox Pod while its turn may still
// use it, delete it once the turn is over; delete a workspace PVC once it has been idle past its
// TTL and no live sandbox Pod mounts it.
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import type { AdmissionState } from '../../services/core/index.js';
import { admissionIdAnnotation, lastUsedAtAnnotation, ttlSecondsAnnotation } from '../api/sandbox-labels.js';

/** Options of the sandbox hygiene controller. */
export interface SandboxHygieneOptions {
  /** How often every sandbox Pod and workspace PVC is checked again (turn states live in Postgres, which is not watched). @defaultValue 60_000 ms */
  resyncMs?: number;
  /** A finished (Succeeded/Failed) sandbox Pod without a turn is deleted this long after it finished. @defaultValue 60_000 ms */
  finishedGraceMs?: number;
  /** A sandbox Pod without a (valid) `hermes.dev/admission-id` annotation is deleted this long after its creation. @defaultValue 60_000 ms */
  unannotatedGraceMs?: number;
  /** TTL of a workspace PVC without a valid `hermes.dev/ttl-seconds` annotation. @defaultValue 604_800 s (7 days) */
  workspaceTtlSeconds?: number;
}

export type ResolvedHygieneOptions = Required<SandboxHygieneOptions>;

export function resolveHygieneOptions(o: SandboxHygieneOptions = {}): ResolvedHygieneOptions {
  return { resyncMs: o.resyncMs ?? 60_000, finishedGraceMs: o.finishedGraceMs ?? 60_000, unannotatedGraceMs: o.unannotatedGraceMs ?? 60_000, workspaceTtlSeconds: o.workspaceTtlSeconds ?? 7 * 24 * 3600 };
}

/** Keep (and look again after `recheckAfterMs`, when something is due then), or delete and why. */
export type Verdict =
  | { action: 'keep'; recheckAfterMs?: number }
  | { action: 'delete'; reason: string; message: string };

/** The state of a Pod's turn: an admission state, or `missing` when no admission row has that id. */
export type TurnState = AdmissionState | 'missing';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The Pod's admission id; undefined when the annotation is absent or not a UUID. */
export function admissionIdOf(pod: V1Pod): string | undefined {
  const id = pod.metadata?.annotations?.[admissionIdAnnotation]?.trim();
  return id && uuid.test(id) ? id.toLowerCase() : undefined;
}

/** Milliseconds since the epoch of an apiserver time (a Date from a list, an RFC 3339 string from a watch). */
export function timeOf(v: Date | string | undefined | null): number | undefined {
  if (v === undefined || v === null) return undefined;
  const ms = v instanceof Date ? v.getTime() : Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
}

export const isFinished = (pod: V1Pod): boolean => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

/** When a finished Pod finished: its last container termination, else its creation. */
export function finishedAt(pod: V1Pod): number | undefined {
  const ends = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])]
    .map((s) => timeOf(s.state?.terminated?.finishedAt as Date | string | undefined))
    .filter((t): t is number => t !== undefined);
  return ends.length ? Math.max(...ends) : timeOf(pod.metadata?.creationTimestamp as Date | string | undefined);
}

function afterGrace(since: number | undefined, graceMs: number, now: number): { due: boolean; inMs: number } {
  const inMs = (since ?? now) + graceMs - now;
  return { due: inMs <= 0, inMs: Math.max(inMs, 0) };
}

/**
 * A sandbox Pod with a valid admission id (`turn` is its state) is kept while the turn is queued
 * or started — never deleted then, even when finished — and deleted once the turn is terminal,
 * unknown, or has no admission row. A Pod without one is deleted when it finished more than
 * `finishedGraceMs` ago or was created more than `unannotatedGraceMs` ago.
 */
export function sandboxPodVerdict(pod: V1Pod, turn: TurnState | undefined, now: number, o: ResolvedHygieneOptions): Verdict {
  if (turn === 'queued' || turn === 'started') return { action: 'keep' };
  const id = admissionIdOf(pod) ?? '';
  if (turn === 'terminal' || turn === 'unknown') return { action: 'delete', reason: `Turn${turn === 'terminal' ? 'Over' : 'Unknown'}`, message: `Deleted sandbox Pod: its turn (admission ${id}) is ${turn}.` };
  if (turn === 'missing') return { action: 'delete', reason: 'TurnNotFound', message: `Deleted sandbox Pod: admission ${id} does not exist.` };
  return strayPodVerdict(pod, now, o);
}

/** A sandbox Pod without a (valid) admission id. */
function strayPodVerdict(pod: V1Pod, now: number, o: ResolvedHygieneOptions): Verdict {
  const raw = pod.metadata?.annotations?.[admissionIdAnnotation];
  const what = raw === undefined ? `no ${admissionIdAnnotation} annotation` : `an invalid ${admissionIdAnnotation} annotation (${JSON.stringify(raw.slice(0, 80))})`;
  const created = afterGrace(timeOf(pod.metadata?.creationTimestamp as Date | string | undefined), o.unannotatedGraceMs, now);
  const finished = isFinished(pod) ? afterGrace(finishedAt(pod), o.finishedGraceMs, now) : undefined;
  if (finished?.due) return { action: 'delete', reason: 'Finished', message: `Deleted sandbox Pod: it finished (${pod.status?.phase}) more than ${Math.round(o.finishedGraceMs / 1000)}s ago and has ${what}.` };
  if (created.due) return { action: 'delete', reason: 'NoTurn', message: `Deleted sandbox Pod: it has ${what} and is older than ${Math.round(o.unannotatedGraceMs / 1000)}s.` };
  return { action: 'keep', recheckAfterMs: Math.min(created.inMs, finished?.inMs ?? Infinity) };
}

/** The TTL of a workspace PVC in seconds: its annotation when a non-negative integer, else the default. */
export function ttlSecondsOf(pvc: V1PersistentVolumeClaim, defaultSeconds: number): number {
  const raw = pvc.metadata?.annotations?.[ttlSecondsAnnotation]?.trim();
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : defaultSeconds;
}

/** When the workspace was last used: its annotation when a valid time, else its creation. */
export function lastUsedAt(pvc: V1PersistentVolumeClaim): number | undefined {
  return timeOf(pvc.metadata?.annotations?.[lastUsedAtAnnotation]) ?? timeOf(pvc.metadata?.creationTimestamp as Date | string | undefined);
}

/** Pods that still hold their volumes: everything not Succeeded/Failed (Pending, Running, Unknown). */
export const isLive = (pod: V1Pod): boolean => !isFinished(pod);

export const claimsOf = (pod: V1Pod): string[] =>
  (pod.spec?.volumes ?? []).map((v) => v.persistentVolumeClaim?.claimName).filter((n): n is string => !!n);

/** A workspace PVC is deleted once idle past its TTL, unless a live sandbox Pod mounts it. */
export function workspaceVerdict(pvc: V1PersistentVolumeClaim, mountedBy: readonly string[], now: number, o: ResolvedHygieneOptions): Verdict {
  if (mountedBy.length) return { action: 'keep' };
  const ttl = ttlSecondsOf(pvc, o.workspaceTtlSeconds);
  const since = lastUsedAt(pvc);
  const idle = afterGrace(since, ttl * 1000, now);
  if (!idle.due) return { action: 'keep', recheckAfterMs: idle.inMs };
  const idleSeconds = Math.round((now - (since ?? now)) / 1000);
  return { action: 'delete', reason: 'WorkspaceExpired', message: `Deleted workspace PVC: unused for ${idleSeconds}s, past its TTL of ${ttl}s, and no live sandbox Pod mounts it.` };
}
