// Mode session on kubernetes-sigs/agent-sandbox: the API coordinates, the names we choose, and
// the SandboxTemplate + SandboxWarmPool the operator keeps per Profile, as pure functions (the
// operator writes them; the worker only claims). A template's Pods run the same restricted spec
// as a per-call Pod (pod-spec.ts), with an idle shell as their command: commands arrive by
// `pods/exec`. Its Pods are labelled `session-sandbox`, never `sandbox`, so the per-call
// hygiene controller leaves them alone. The template's own NetworkPolicy (managed by
// agent-sandbox) denies all ingress and egress; an egress allowlist is opened by the worker's
// per-Profile NetworkPolicy (NetworkPolicies add up).
import { createHash } from 'node:crypto';
import type { V1OwnerReference } from '@kubernetes/client-node';
import {
  componentLabel, profileKey, profileNamespaceKey, sessionSandboxComponent, sessionWorkspaceComponent, type CompiledSandbox,
} from '../../core/index.js';
import { WORKSPACE_PATH } from '../types.js';
import { dnsLabel, labelValue } from '../kubernetes/names.js';
import { CONTAINER_NAME, containerEnv, restrictedPodSpec } from '../kubernetes/pod-spec.js';
import type { KubernetesSandboxSettings } from '../kubernetes/settings.js';

export const SANDBOX_GROUP = 'agents.x-k8s.io';
export const EXTENSIONS_GROUP = 'extensions.agents.x-k8s.io';
export const AGENT_SANDBOX_VERSION = 'v1beta1';
export const plural = { sandboxes: 'sandboxes', templates: 'sandboxtemplates', warmPools: 'sandboxwarmpools', claims: 'sandboxclaims' } as const;

/** Labels agent-sandbox sets on a Sandbox: `warm` when it came from a SandboxWarmPool, else `cold`. */
export const LAUNCH_TYPE_LABEL = 'agents.x-k8s.io/launch-type';
/** Annotation on a claim: the Sandbox it adopted. */
export const CLAIM_SANDBOX_ANNOTATION = 'agents.x-k8s.io/sandbox-name';
/** Annotation on an adopted Sandbox: its Pod, when the Pod's name is not the Sandbox's. */
export const POD_NAME_ANNOTATION = 'agents.x-k8s.io/pod-name';

/** The volumeClaimTemplate that becomes the session's workspace (PVC `workspace-<sandbox>`). */
export const WORKSPACE_VOLUME = 'workspace';

/** An idle loop that ends at once on SIGTERM (the Pod's deletion), so a suspend takes no grace period. */
export const IDLE_COMMAND = ['/bin/sh', '-c', 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done'];

/** SPEC's 30 minutes: a session sandbox unused this long is suspended (its workspace stays). */
export const DEFAULT_IDLE_SECONDS = 1_800;

/** The SandboxTemplate and SandboxWarmPool of a Profile (same name). */
export const sessionPoolName = (profile: string): string => `hermes-${dnsLabel(profile, 56)}`;

/** The SandboxClaim of a session: one per (Agent's namespace, Agent, session), found again by name from any worker. */
export function sessionClaimName(s: { namespace: string; agent: string; sessionId: string }): string {
  return `hermes-session-${createHash('sha256').update(JSON.stringify([s.namespace, s.agent, s.sessionId])).digest('hex').slice(0, 24)}`;
}

/** The per-Profile NetworkPolicy opening an egress allowlist to the Profile's session sandboxes. */
export const sessionPolicyName = (profile: string): string => `hermes-session-${dnsLabel(profile, 48)}`;

/** Labels of the Pods of a Profile's template (NetworkPolicy selectors use them). */
export const sessionPodLabels = (profile: string): Record<string, string> => ({
  [componentLabel]: sessionSandboxComponent,
  [profileKey]: labelValue(profile),
  'app.kubernetes.io/managed-by': 'hermes',
});

/** The labels of a Profile's SandboxTemplate and SandboxWarmPool, wherever they are. */
export const sessionPoolLabels = (profileNamespace: string, profile: string): Record<string, string> => ({
  [profileKey]: labelValue(profile), [profileNamespaceKey]: profileNamespace, 'app.kubernetes.io/managed-by': 'hermes',
});

/** The label selector of a Profile's SandboxTemplates and SandboxWarmPools in every namespace. */
export const sessionPoolSelector = (profileNamespace: string, profile: string): string =>
  Object.entries(sessionPoolLabels(profileNamespace, profile)).map(([k, v]) => `${k}=${v}`).join(',');

/** Every SandboxTemplate and SandboxWarmPool the operator wrote, for any Profile. */
export const allSessionPoolsSelector = `app.kubernetes.io/managed-by=hermes,${profileNamespaceKey}`;

export interface SessionPoolInput {
  /** The Profile's name (the pool's name follows from it). */
  profile: string;
  /** The Profile's own namespace (labelled on both objects: what it left elsewhere is found by it). */
  profileNamespace: string;
  /** Where the sandboxes run: the Profile's `spec.sandbox.namespace`, else its own. */
  namespace: string;
  sandbox: CompiledSandbox;
  settings: KubernetesSandboxSettings;
  /** The Profile, when in the same namespace: deleting it deletes the template and pool. */
  owner?: V1OwnerReference;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: V1OwnerReference[]; resourceVersion?: string };
  spec: Record<string, unknown>;
}

function meta(input: SessionPoolInput): KubeObject['metadata'] {
  return {
    name: sessionPoolName(input.profile),
    namespace: input.namespace,
    labels: sessionPoolLabels(input.profileNamespace, input.profile),
    annotations: { [profileKey]: input.profile },
    ...(input.owner ? { ownerReferences: [input.owner] } : {}),
  };
}

/** The Profile's SandboxTemplate: the restricted Pod, a workspace volume per sandbox, deny-all networking. */
export function sessionTemplate(input: SessionPoolInput): KubeObject {
  const { sandbox, settings } = input;
  const pod = {
    ...(sandbox.image ? { image: sandbox.image } : {}),
    ...(sandbox.resources ? { resources: sandbox.resources } : {}),
    ...(sandbox.runtimeClassName ? { runtimeClassName: sandbox.runtimeClassName } : {}),
  };
  const spec = restrictedPodSpec({
    settings, pod, command: IDLE_COMMAND, workingDir: WORKSPACE_PATH, env: containerEnv(),
    // The workspace volume itself is added by agent-sandbox from the volumeClaimTemplate of the same name.
    volumes: [{ name: 'tmp', emptyDir: { sizeLimit: settings.tmpSize } }],
    mounts: [{ name: WORKSPACE_VOLUME, mountPath: WORKSPACE_PATH }, { name: 'tmp', mountPath: '/tmp' }],
  });
  return {
    apiVersion: `${EXTENSIONS_GROUP}/${AGENT_SANDBOX_VERSION}`,
    kind: 'SandboxTemplate',
    metadata: meta(input),
    spec: {
      podTemplate: { metadata: { labels: sessionPodLabels(input.profile), annotations: { [profileKey]: input.profile } }, spec },
      volumeClaimTemplates: [{
        metadata: { name: WORKSPACE_VOLUME, labels: { [componentLabel]: sessionWorkspaceComponent, [profileKey]: labelValue(input.profile) } },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: sandbox.workspace.size } },
          ...(settings.storageClassName ? { storageClassName: settings.storageClassName } : {}),
        },
      }],
      service: false,
      networkPolicyManagement: 'Managed',
      networkPolicy: { ingress: [], egress: [] },
      envVarsInjectionPolicy: 'Disallowed',
      volumeClaimTemplatesPolicy: 'Disallowed',
    },
  };
}

/** The Profile's SandboxWarmPool: `warmPool.size` ready sandboxes (default 1); stale ones are replaced at once. */
export function sessionWarmPool(input: SessionPoolInput): KubeObject {
  return {
    apiVersion: `${EXTENSIONS_GROUP}/${AGENT_SANDBOX_VERSION}`,
    kind: 'SandboxWarmPool',
    metadata: meta(input),
    spec: {
      replicas: input.sandbox.warmPool?.size ?? 1,
      sandboxTemplateRef: { name: sessionPoolName(input.profile) },
      updateStrategy: { type: 'Recreate' },
    },
  };
}

/** The container commands run in (agent-sandbox keeps the template's container names). */
export const SESSION_CONTAINER = CONTAINER_NAME;
