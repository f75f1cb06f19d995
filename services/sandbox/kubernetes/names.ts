// Deterministic names and label values of what the backend creates. Names are chosen here, not
// by the apiserver (no generateName), so a create whose answer was lost can still be deleted.
import { createHash, randomBytes } from 'node:crypto';

const hash = (s: string, n: number): string => createHash('sha256').update(s).digest('hex').slice(0, n);

/**
 * A valid label value (≤ 63 characters of [A-Za-z0-9._-], alphanumeric at both ends) for `s`:
 * `s` itself when it is one, else a readable prefix plus a hash (the full value goes in an annotation).
 */
export function labelValue(s: string): string {
  if (s.length <= 63 && /^([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?$/.test(s)) return s;
  const prefix = s.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 50).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return `${prefix ? `${prefix}-` : ''}${hash(s, 12)}`;
}

/** A DNS label (≤ 63 of [a-z0-9-]) for `s`, hashed when `s` is not one. */
export function dnsLabel(s: string, max: number): string {
  if (s.length <= max && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(s)) return s;
  const prefix = s.toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, Math.max(0, max - 13)).replace(/^-+|-+$/g, '');
  return `${prefix ? `${prefix}-` : ''}${hash(s, 12)}`;
}

/** A fresh sandbox Pod name. */
export const sandboxPodName = (): string => `hermes-sandbox-${randomBytes(6).toString('hex')}`;

/** The session's workspace PVC: one per session, found again by name. */
export const workspacePvcName = (sessionId: string): string => `hermes-workspace-${dnsLabel(sessionId, 45)}`;

/** The ConfigMap carrying a call's stdin (deleted with the Pod). */
export const stdinConfigMapName = (podName: string): string => `${podName}-stdin`;

/** The Agent's sandbox NetworkPolicy. */
export const networkPolicyName = (agent: string): string => `hermes-sandbox-${dnsLabel(agent, 48)}`;
