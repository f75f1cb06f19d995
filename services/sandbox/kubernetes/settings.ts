// The kubernetes backend's install-wide settings (HERMES_SANDBOX_* in services/core/config.ts);
// a Profile's `spec.sandbox` (ExecRequest.pod) overrides image, namespace, resources and
// runtimeClassName per call.
import type { Config } from '../../core/index.js';

export interface KubernetesSandboxSettings {
  /** @defaultValue nikolaik/python-nodejs:python3.11-nodejs20 */
  image: string;
  /** ServiceAccount of sandbox Pods (created when missing, with no token mounted). @defaultValue hermes-sandbox */
  serviceAccountName: string;
  /** The uid, gid and fsGroup of the sandbox container. @defaultValue 1000 */
  uid: number;
  requests: Record<string, string>;
  limits: Record<string, string>;
  /** sizeLimit of the /tmp emptyDir. @defaultValue 1Gi */
  tmpSize: string;
  /** Creation → container running; past it the call is degraded. @defaultValue 60_000 */
  startTimeoutMs: number;
  storageClassName?: string;
  runtimeClassName?: string;
  /** Where the cluster DNS runs (opened for host:port egress entries). */
  dns: { namespace: string; podLabels: Record<string, string> };
  /** How often host:port entries are re-resolved and an Agent's NetworkPolicy re-written. @defaultValue 300_000 */
  policyRefreshMs: number;
  /** Poll of the Pod beside its watch (a broken watch never hangs a call). @defaultValue 1_000 */
  pollMs: number;
  /** How long the apiserver may stay unreachable during a running command before the call is given up as degraded. @defaultValue 30_000 */
  lostContactMs: number;
  /** Longest wait for one apiserver request (create, patch, delete) before it counts as unanswered. @defaultValue 15_000 */
  apiTimeoutMs: number;
}

export const defaultKubernetesSandboxSettings: KubernetesSandboxSettings = {
  image: 'nikolaik/python-nodejs:python3.11-nodejs20',
  serviceAccountName: 'hermes-sandbox',
  uid: 1000,
  requests: { cpu: '100m', memory: '256Mi', 'ephemeral-storage': '256Mi' },
  limits: { cpu: '1', memory: '2Gi', 'ephemeral-storage': '2Gi' },
  tmpSize: '1Gi',
  startTimeoutMs: 60_000,
  dns: { namespace: 'kube-system', podLabels: { 'k8s-app': 'kube-dns' } },
  policyRefreshMs: 300_000,
  pollMs: 1_000,
  lostContactMs: 30_000,
  apiTimeoutMs: 15_000,
};

/** The backend's settings from the process configuration. */
export function kubernetesSandboxSettings(config: Config): KubernetesSandboxSettings {
  return {
    ...defaultKubernetesSandboxSettings,
    image: config.HERMES_SANDBOX_IMAGE,
    serviceAccountName: config.HERMES_SANDBOX_SERVICE_ACCOUNT,
    uid: config.HERMES_SANDBOX_UID,
    requests: config.HERMES_SANDBOX_REQUESTS,
    limits: config.HERMES_SANDBOX_LIMITS,
    tmpSize: config.HERMES_SANDBOX_TMP_SIZE,
    startTimeoutMs: config.HERMES_SANDBOX_START_TIMEOUT_SECONDS * 1_000,
    ...(config.HERMES_SANDBOX_STORAGE_CLASS ? { storageClassName: config.HERMES_SANDBOX_STORAGE_CLASS } : {}),
    ...(config.HERMES_SANDBOX_RUNTIME_CLASS ? { runtimeClassName: config.HERMES_SANDBOX_RUNTIME_CLASS } : {}),
    dns: { namespace: config.HERMES_SANDBOX_DNS_NAMESPACE, podLabels: config.HERMES_SANDBOX_DNS_SELECTOR },
    policyRefreshMs: config.HERMES_SANDBOX_POLICY_REFRESH_SECONDS * 1_000,
  };
}
