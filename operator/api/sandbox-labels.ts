// The sandbox backend ↔ operator contract; it lives in services/core/sandbox-labels.ts (the
// sandbox backend may not import operator/), re-exported here for the operator.
export {
  admissionIdAnnotation, agentKey, componentLabel, lastUsedAtAnnotation, nodeAnnotation, sandboxComponent,
  sandboxPodSelector, sessionKey, ttlSecondsAnnotation, workspaceComponent, workspacePvcSelector,
} from '../../services/core/index.js';
