// The permissions the worker's ServiceAccount needs for the kubernetes sandbox backend, as data:
// the Helm chart grants exactly these, and test/integration/sandbox/kubernetes-rbac.test.ts runs
// the backend as a ServiceAccount bound to nothing else. Namespaced rules go in a Role (or a
// ClusterRole bound per namespace) in every namespace that runs sandbox Pods; reading Nodes
// (to drop a pin to a Node that is gone) needs a ClusterRole — without it the pin is kept as
// recorded and a Pod pinned to a vanished Node answers degraded after the start timeout.
import type { V1PolicyRule } from '@kubernetes/client-node';

export const sandboxNamespacedRules: readonly V1PolicyRule[] = [
  /** Sandbox Pods: created, followed (watch by name, get), deleted. */
  { apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'watch', 'delete'] },
  /** Their output. */
  { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
  /** Session workspaces: created on first use, last-used-at and the Node refreshed by patch. */
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['create', 'patch'] },
  /** A call's stdin. */
  { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'patch', 'delete'] },
  /** The sandbox ServiceAccount, created when missing. */
  { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['get', 'create'] },
  /** The Agent's sandbox NetworkPolicy. */
  { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'create', 'update'] },
  /** Mode session: the session's SandboxClaim (created, stamped, watched by name until Ready), its Sandbox (read, resumed), commands by exec; channel processes (execute_code) by exec in either mode. */
  { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['get', 'create', 'patch', 'watch'] },
  { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'patch'] },
  { apiGroups: [''], resources: ['pods/exec'], verbs: ['create', 'get'] },
];

export const sandboxClusterRules: readonly V1PolicyRule[] = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
];
