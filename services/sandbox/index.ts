// Sandbox backends: where terminal and file tools run (ARCHITECTURE §6).
export * from './types.js';
export * from './output.js';
export { kubernetesSandbox, type KubernetesSandboxOptions } from './kubernetes/backend.js';
export { defaultKubernetesSandboxSettings, kubernetesSandboxSettings, type KubernetesSandboxSettings } from './kubernetes/settings.js';
export { parseAllowEntry, sandboxNetworkPolicy, PRIVATE_RANGES, type AllowEntry } from './kubernetes/network-policy.js';
export { sandboxClusterRules, sandboxNamespacedRules } from './kubernetes/rbac.js';
export { bubblewrapSandbox, bubblewrapSandboxFromConfig, type BubblewrapOptions, type BubblewrapAllowlist } from './bubblewrap.js';
export type { SandboxLimits } from './bubblewrap-args.js';
export { workspaceDir, ensureWorkspaceDir } from './workspace-dir.js';
export { sandboxNamespaceProblems } from './kubernetes/readiness.js';
export { apiNotServed, kubeErrorLine } from './kubernetes/failures.js';
export { dnsLabel } from './kubernetes/names.js';
export { sessionKubernetesSandbox, type SessionSandboxMetrics, type SessionSandboxOptions } from './agent-sandbox/backend.js';
export {
  sessionPoolName, sessionTemplate, sessionWarmPool, sessionClaimName, sessionPoolLabels, sessionPoolSelector, allSessionPoolsSelector, DEFAULT_IDLE_SECONDS, SANDBOX_GROUP, EXTENSIONS_GROUP, AGENT_SANDBOX_VERSION,
  plural as agentSandboxPlural, type KubeObject, type SessionPoolInput,
} from './agent-sandbox/resources.js';
export { SESSION_CWD_DIR } from './agent-sandbox/pod-exec.js';
