// The contract between the kubernetes sandbox backend (which creates one ephemeral Pod per
// terminal tool call and a workspace PVC per session) and the operator's sandbox hygiene
// controller (which deletes what the backend left behind). Both sides import these names; the
// operator never looks at a sandbox Pod or workspace PVC without `componentLabel`. It lives in
// core because both services/sandbox and operator/ import it (operator/api/sandbox-labels.ts
// re-exports it).

/** Label on sandbox Pods and workspace PVCs: `sandbox` or `workspace`. */
export const componentLabel = 'hermes.dev/component';
export const sandboxComponent = 'sandbox';
export const workspaceComponent = 'workspace';

/** Label and annotation: the namespace-local name of the Agent the Pod or PVC belongs to. */
export const agentKey = 'hermes.dev/agent';

/** Annotation on sandbox Pods: the admission (turn) id, a UUID from the `admissions` table. */
export const admissionIdAnnotation = 'hermes.dev/admission-id';

/** Annotation on workspace PVCs: seconds of disuse after which the PVC is deleted (integer). */
export const ttlSecondsAnnotation = 'hermes.dev/ttl-seconds';

/** Annotation on workspace PVCs: when the workspace was last used (RFC 3339); creationTimestamp when absent. */
export const lastUsedAtAnnotation = 'hermes.dev/last-used-at';

/** Label on sandbox Pods and workspace PVCs (and annotation on both): the session id the workspace belongs to. */
export const sessionKey = 'hermes.dev/session';

/** Annotation on workspace PVCs: the Node the session's last sandbox Pod ran on (later Pods are pinned there). */
export const nodeAnnotation = 'hermes.dev/node';

/** Label selectors for lists and watches. */
export const sandboxPodSelector = `${componentLabel}=${sandboxComponent}`;
export const workspacePvcSelector = `${componentLabel}=${workspaceComponent}`;

/**
 * Mode session (agent-sandbox): the Pods of a Profile's SandboxTemplate carry
 * `componentLabel: session-sandbox` (never `sandbox`, so the per-call hygiene leaves them alone),
 * their workspace PVCs `session-workspace`, and the session's SandboxClaim `session-claim` (with
 * agentKey, sessionKey, lastUsedAtAnnotation, ttlSecondsAnnotation and idleSecondsAnnotation:
 * the operator suspends the claim's Sandbox once idle, and deletes the claim once past its TTL).
 */
export const sessionSandboxComponent = 'session-sandbox';
export const sessionWorkspaceComponent = 'session-workspace';
export const sessionClaimComponent = 'session-claim';

/** Label on session sandbox Pods, annotation on SandboxTemplates: the Profile whose template they come from. */
export const profileKey = 'hermes.dev/profile';

/**
 * Label on a Profile's SandboxTemplate and SandboxWarmPool: the Profile's namespace (with
 * `profileKey`, the label that finds what a Profile left in other namespaces).
 */
export const profileNamespaceKey = 'hermes.dev/profile-namespace';

/** Annotation on session SandboxClaims: seconds of disuse after which the Sandbox is suspended (integer). */
export const idleSecondsAnnotation = 'hermes.dev/idle-seconds';

/**
 * Annotation on a session's Sandbox (agent-sandbox): until when a command of a worker holds it
 * (RFC 3339). A worker writes it before each command by a JSON patch that tests the Sandbox's
 * uid and operatingMode as it found them when the Sandbox was Ready, and renews it while the
 * command runs; the sweep never suspends a Sandbox whose lease has not run out, and writes its
 * suspend with the resourceVersion it decided on, so of a suspend and a mark that race, the first
 * write wins and the other fails (the suspend 409, the mark 422).
 */
export const inUseUntilAnnotation = 'hermes.dev/in-use-until';

export const sessionClaimSelector = `${componentLabel}=${sessionClaimComponent}`;
